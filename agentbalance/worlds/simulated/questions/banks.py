"""The schema of the question banks (the YAML files in `simulated/banks/`) and their loader, one read per bank.

It must never accept an unknown key or a wrongly typed value silently: a typo in a bank is an error naming the file.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator

from agentbalance.errors import AgentBalanceError, describe_validation_error
from agentbalance.files import read_yaml_mapping

BANK_DIR = Path(__file__).resolve().parent.parent / "banks"


def _placeholders(*allowed: str) -> Callable[[str], str]:
    """A check that a `str.format` template names only `allowed` fields (a typo would fail mid-generation)."""

    def check(template: str) -> str:
        try:
            fields = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
        except ValueError as error:
            raise ValueError(f"not a valid template: {error}") from None
        unknown = sorted(fields - set(allowed))
        if unknown:
            raise ValueError(f"unknown placeholder {{{unknown[0]}}}; this template may use {allowed}")
        return template

    return check


def _exact_fraction(value: object) -> Fraction:
    """An exact number: an integer or a fraction written 'p/q' (never a float, whose value would be rounded)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value)
        except (ValueError, ZeroDivisionError):
            pass
    raise ValueError(f"expected an integer or a fraction such as '3/16', got {value!r}")


Item = TypeVar("Item")
Some = Annotated[tuple[Item, ...], Field(min_length=1)]  # entries are picked at random: at least one
Text = Annotated[str, Field(min_length=1)]
Options = Some[Text]
ThreeOrMore = Annotated[tuple[Text, ...], Field(min_length=3)]  # three are drawn without replacement
Wrong = tuple[Text, Text, Text]  # most attractive first
Exact = Annotated[Fraction, PlainValidator(_exact_fraction)]
Letter = Annotated[str, Field(pattern=r"^[A-Z]$")]
LeadIn = Annotated[str, AfterValidator(_placeholders("name", "course", "a_course", "A_course"))]
Frame = Annotated[str, AfterValidator(_placeholders("name", "subject", "a_course", "A_course"))]
Person = Annotated[str, AfterValidator(_placeholders("n"))]
CountryStem = Annotated[str, AfterValidator(_placeholders("country"))]
CityStem = Annotated[str, AfterValidator(_placeholders("city"))]
EventStem = Annotated[str, AfterValidator(_placeholders("event", "Event"))]
CodeLead = Annotated[str, AfterValidator(_placeholders("sig", "core"))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BankFile(_Strict):
    """One bank file; `file` is its name in BANK_DIR without `.yaml`."""

    file: ClassVar[str]


class Fact(_Strict):
    """A question with one right option: stems (one is drawn), the answer, three wrong options, an obscurity offset."""

    stems: Options
    correct: Text
    wrong: Wrong
    offset: float = 0.0


class Category(_Strict):
    """Members vs look-alikes, asked positively (pick the member) or with EXCEPT / NOT (pick the look-alike)."""

    positive: Options
    negative: Options
    members: ThreeOrMore  # most typical first
    others: ThreeOrMore  # most member-like first
    offset: float = 0.0


class Subject(BankFile):
    """A general-domain subject: the courses its lead-in sentences name, and its facts and categories."""

    courses: Options
    facts: Some[Fact]
    categories: tuple[Category, ...] = ()


# ---------------------------------------------------------------------------------------------------------------------
# Shared and per-subject banks of the general domain.


class CommonBank(BankFile):
    file = "common"
    names: Annotated[tuple[Text, ...], Field(min_length=6)]  # a code example draws up to six different people
    things: Options
    lead_ins: Some[LeadIn]


class Capital(_Strict):
    country: Text
    capital: Text
    wrong: Wrong
    offset: float


class River(_Strict):
    city: Text
    river: Text
    wrong: Wrong
    offset: float


class GeographyBank(Subject):
    file = "high_school_geography"
    capitals: Some[Capital]
    capital_stems: Some[CountryStem]
    rivers: Some[River]
    river_stems: Some[CityStem]


class Deficiency(_Strict):
    nutrient: Text
    condition: Text
    wrong_conditions: Wrong
    wrong_nutrients: Wrong
    offset: float


class NutritionBank(Subject):
    file = "nutrition"
    meals: Options
    deficiencies: Some[Deficiency]


class PricingStrategy(_Strict):
    scene: Annotated[str, AfterValidator(_placeholders("co", "product", "whole", "next"))]
    strategy: Text
    wrong: Wrong
    offset: float


class Segmentation(_Strict):
    segment: Text
    bases: Options
    wrong: Wrong


class LifeCycleStage(_Strict):
    scene: Annotated[str, AfterValidator(_placeholders("co", "product"))]
    stage: Text
    wrong: Wrong


class GrowthStrategy(_Strict):
    scene: Annotated[str, AfterValidator(_placeholders("co", "product", "market"))]
    strategy: Text
    wrong: Wrong


class MarketingBank(BankFile):
    file = "marketing"
    courses: Options
    company_prefixes: Options
    company_suffixes: Options
    products: Options
    markets: Options
    pricing: Some[PricingStrategy]
    segments: Some[Segmentation]
    life_cycle: Some[LifeCycleStage]
    ansoff: Some[GrowthStrategy]
    category: Category


class HistoricEvent(_Strict):
    event: Text
    year: int
    offset: float


class WorldHistoryBank(Subject):
    file = "world_history"
    years: Some[HistoricEvent]
    year_stems: Some[EventStem]


class Trait(_Strict):
    organism: Text
    dominant: Text
    recessive: Text
    letter: Letter


class Cross(_Strict):
    """A Mendelian cross: the parents' genotypes, what is asked, the exact answer, wrong fractions, extra work."""

    first: Text
    second: Text
    asked: Text
    gold: Exact
    wrong: Wrong
    extra: float


class MonohybridCross(Cross):
    first: Annotated[str, Field(pattern=r"^[Aa]{2}$")]  # A dominant, a recessive: replaced by the trait's letter
    second: Annotated[str, Field(pattern=r"^[Aa]{2}$")]
    asked: Literal["recessive", "dominant", "heterozygous"]


class BiologyBank(Subject):
    file = "high_school_biology"
    traits: Some[Trait]
    monohybrid: Some[MonohybridCross]
    dihybrid: Some[Cross]


class Substance(_Strict):
    name: Text
    formula: Text
    molar_mass: Exact  # g/mol


class Compound(_Strict):
    name: Text
    formula: Text


class ChemistryBank(Subject):
    file = "high_school_chemistry"
    substances: Some[Substance]
    acids: Some[Compound]  # strong, monoprotic
    bases: Some[Compound]  # strong, one hydroxide


class ClinicalBank(Subject):
    file = "clinical_knowledge"


class PhysicsBank(BankFile):
    file = "college_physics"
    courses: Options
    objects: Options
    platforms: Options
    gases: Options


class Atom(_Strict):
    """An atomic sentence and its negation; {n} is a person's name."""

    positive: Person
    negative: Person


class Term(_Strict):
    """A predicate: its singular and plural wording and its letter in formulas."""

    singular: Text
    plural: Text
    letter: Letter


class FormalLogicBank(BankFile):
    file = "formal_logic"
    courses: Options
    atoms: Annotated[tuple[Atom, ...], Field(min_length=3)]
    kinds: Some[Term]
    properties: Annotated[tuple[Term, ...], Field(min_length=2)]

    @model_validator(mode="after")
    def _a_property_for_every_kind(self) -> FormalLogicBank:
        for kind in self.kinds:
            if all(prop.letter == kind.letter for prop in self.properties):
                raise ValueError(f"kind {kind.singular!r} needs a property with a letter other than {kind.letter}")
        return self


class Act(_Strict):
    """A first-person act ({n}: another person's name); `subtle` marks a less obvious verdict."""

    act: Person
    subtle: bool


class MoralScenariosBank(BankFile):
    file = "moral_scenarios"
    stems: Options
    morally_wrong: Some[Act]
    not_morally_wrong: Some[Act]


class Variables(_Strict):
    outcome: Text
    regressor: Text


class EconometricsBank(Subject):
    file = "econometrics"
    variables: Some[Variables]


class Extension(_Strict):
    field: Annotated[str, AfterValidator(_placeholders("a", "b"))]  # {a}, {b}: two different primes
    degree: int
    wrong: tuple[int, int, int]


class AbstractAlgebraBank(BankFile):
    file = "abstract_algebra"
    courses: Options
    true_statements: Annotated[tuple[Text, ...], Field(min_length=2)]  # two different ones may be drawn
    false_statements: Annotated[tuple[Text, ...], Field(min_length=2)]
    extensions: Some[Extension]


class ProfessionalLawBank(BankFile):
    file = "professional_law"
    items: Options


# ---------------------------------------------------------------------------------------------------------------------
# The math and code domains.


class MathBank(BankFile):
    file = "math"
    frames: Some[Frame]
    goods: Options
    places: Options
    ingredients: Options
    words: Annotated[tuple[Annotated[str, Field(pattern=r"^[A-Z]+$")], ...], Field(min_length=1)]


class FunctionSpec(_Strict):
    """A function to write. `does` + `example` (a function of code.py drawing an example call, or none), or
    `writer` (a function of code.py that words the description and the example together)."""

    names: Annotated[tuple[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")], ...], Field(min_length=1)]
    signature: Text
    does: Text | None = None
    example: Text | None = None
    writer: Text | None = None
    requirements: ThreeOrMore
    edge_cases: ThreeOrMore
    offset: float = 0.0

    @model_validator(mode="after")
    def _described_one_way(self) -> FunctionSpec:
        if (self.does is None) == (self.writer is None):
            raise ValueError("give either `does` (and optionally `example`) or `writer`")
        if self.writer is not None and self.example is not None:
            raise ValueError("a `writer` draws its own example; drop `example`")
        return self


Specs = Some[FunctionSpec]


class CodeTopics(_Strict):
    """The function specs of each code topic (the topic names of generate.py)."""

    string_manipulation: Specs
    list_filtering: Specs
    number_utilities: Specs
    counting_with_dictionaries: Specs
    sorting_with_keys: Specs
    parsing: Specs
    two_pointers: Specs
    recursion: Specs
    intervals: Specs
    graph_search: Specs
    dynamic_programming: Specs


class CodeBank(BankFile):
    file = "code"
    leads: Some[CodeLead]
    example_words: Annotated[tuple[Annotated[str, Field(pattern=r"^[a-z]+$")], ...], Field(min_length=6)]
    palindromes: Options
    topics: CodeTopics


BANKS: tuple[type[BankFile], ...] = (
    CommonBank,
    GeographyBank,
    NutritionBank,
    MarketingBank,
    WorldHistoryBank,
    BiologyBank,
    ChemistryBank,
    ClinicalBank,
    PhysicsBank,
    FormalLogicBank,
    MoralScenariosBank,
    EconometricsBank,
    AbstractAlgebraBank,
    ProfessionalLawBank,
    MathBank,
    CodeBank,
)

Bank = TypeVar("Bank", bound=BankFile)


def bank_path(schema: type[BankFile]) -> Path:
    return BANK_DIR / f"{schema.file}.yaml"


def read_bank(path: Path, schema: type[Bank]) -> Bank:
    """Read and validate one bank file; any problem is an AgentBalanceError naming the file and the field."""
    raw = read_yaml_mapping(path, "question bank")
    try:
        return schema.model_validate(raw)
    except ValidationError as error:
        raise AgentBalanceError(describe_validation_error(error, str(path))) from None


@functools.cache
def _shipped(schema: type[BankFile]) -> BankFile:
    return read_bank(bank_path(schema), schema)


def load_bank(schema: type[Bank]) -> Bank:
    """The shipped bank of `schema`, read once per process (the files never change while it runs)."""
    bank = _shipped(schema)
    assert isinstance(bank, schema)
    return bank
