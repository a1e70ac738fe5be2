"""Synthetic MMLU-, MATH- and HumanEval-like queries whose latent difficulty b the text reveals only partly.

It must never name difficulty in the text nor use global random state: item i depends only on (domain, seed, i).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS, Query

T = TypeVar("T")
Rng = np.random.Generator

RESIDUAL_SD = 0.7
"""Standard deviation of the part of b that no text feature reveals (the estimator's irreducible error)."""

QUALIFIER_WEIGHT = 0.5
"""What an EXCEPT / NOT stem adds to an MCQ's difficulty."""

CODE_DISTRACTORS = ("fail-edge-case", "fail-logic", "fail-syntax")
LETTERS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class _Draft:
    """One generated item before assembly: its text, gold, wrong answers (most attractive first), complexity."""

    question: str
    answer: str
    wrong: tuple[str, ...]
    complexity: float


@dataclass(frozen=True)
class Topic:
    """A topic of a domain: its base difficulty and the builder that writes one item of it."""

    name: str
    base: float
    build: Callable[[Rng], _Draft]


# ---------------------------------------------------------------------------------------------------------------------
# Small helpers: every random choice goes through the item's own generator.


def _pick(rng: Rng, options: Sequence[T]) -> T:
    return options[int(rng.integers(len(options)))]


def _sample(rng: Rng, options: Sequence[T], k: int) -> list[T]:
    return [options[int(j)] for j in rng.choice(len(options), size=k, replace=False)]


def _int(rng: Rng, low: int, high: int) -> int:
    """Uniform integer in [low, high], both ends included."""
    return int(rng.integers(low, high + 1))


def _digits(value: int | Fraction) -> int:
    return len(str(abs(int(value))))


def _magnitude(*values: int | Fraction, free: int = 2, weight: float = 0.25) -> float:
    """Difficulty from the size of the numbers: `weight` per digit beyond `free` of the largest one."""
    return weight * max(0, max(_digits(v) for v in values) - free)


def _exact(value: int | Fraction) -> str:
    """Short exact answer: '42', '-3', '2.5' (terminating, <= 3 decimals), else a reduced fraction '3/7'."""
    v = Fraction(value)
    if v.denominator == 1:
        return str(v.numerator)
    for places in (1, 2, 3):
        scaled = v * 10**places
        if scaled.denominator == 1:
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            sign = "-" if v < 0 else ""
            return f"{sign}{digits[:-places]}.{digits[-places:]}"
    return f"{v.numerator}/{v.denominator}"


def _ratio(value: int | Fraction) -> str:
    """A probability or share as a reduced fraction ('3/8'), or an integer when whole."""
    v = Fraction(value)
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _three_wrong(gold: str, candidates: Sequence[str], spare: Callable[[int], str]) -> tuple[str, str, str]:
    """The first three candidates that differ from gold and from each other, topped up from `spare(1)`, ..."""
    out: list[str] = []
    for candidate in candidates:
        if candidate != gold and candidate not in out:
            out.append(candidate)
        if len(out) == 3:
            return (out[0], out[1], out[2])
    k = 1
    while len(out) < 3:
        candidate = spare(k)
        if candidate != gold and candidate not in out:
            out.append(candidate)
        k += 1
    return (out[0], out[1], out[2])


def _numeric_wrong(
    gold: int | Fraction,
    candidates: Sequence[int | Fraction],
    fmt: Callable[[int | Fraction], str] = _exact,
    positive: bool = True,
) -> tuple[str, str, str]:
    """Wrong numeric answers (formatted) in the given order of attractiveness, topped up by gold +- small steps."""

    def spare(k: int) -> str:
        step = (k + 1) // 2
        value = Fraction(gold) + (step if k % 2 else -step)
        if positive and value <= 0:
            value = Fraction(gold) + step + 10
        return fmt(value)

    usable = [c for c in candidates if not positive or Fraction(c) > 0]
    return _three_wrong(fmt(gold), [fmt(c) for c in usable], spare)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _signed(coefficient: int, term: str, first: bool = False) -> str:
    """One term of a polynomial or linear expression: '+ 3x', '- x', '7' ..."""
    magnitude = abs(coefficient)
    body = (term if magnitude == 1 and term else f"{magnitude}{term}") if term else str(magnitude)
    if first:
        return f"-{body}" if coefficient < 0 else body
    return f"- {body}" if coefficient < 0 else f"+ {body}"


def _linear(terms: Sequence[tuple[int, str]]) -> str:
    """Render sum(c * t) skipping zero terms, e.g. [(2, 'x'), (-1, 'y'), (5, '')] -> '2x - y + 5'."""
    parts: list[str] = []
    for coefficient, term in terms:
        if coefficient == 0:
            continue
        parts.append(_signed(coefficient, term, first=not parts))
    return " ".join(parts) if parts else "0"


NAMES = (
    "Amara", "Ben", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kofi", "Lena",
    "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Victor", "Wen", "Ximena",
    "Yusuf", "Zoe", "Aiko", "Bruno", "Carmen", "Deepak", "Esther", "Felix", "Gita", "Hugo", "Ivy", "Jonas",
    "Keiko", "Liam", "Maya", "Noah", "Olga", "Pablo", "Rania", "Sven", "Tomas", "Ulla", "Vera", "Wale",
    "Yara", "Zain", "Anika", "Bilal", "Celine", "Diego", "Emeka", "Freya", "Gabriel", "Hana", "Ivan", "Jade",
)  # fmt: skip

THINGS = ("marbles", "stickers", "apples", "trading cards", "pencils", "stamps", "beads", "shells", "coins", "books")

_LEAD_INS = (
    "{name} is revising for {a_course} exam and meets this question.",
    "On {a_course} quiz, {name} reads the following.",
    "{name}'s {course} tutor asks this question.",
    "{A_course} worksheet given to {name} includes this item.",
    "{name} comes across this in {a_course} textbook.",
    "In {a_course} study group, {name} poses this question.",
    "{name} is checking answers to {a_course} practice test.",
    "This item appears among {name}'s {course} flashcards.",
)


def _articles(word: str) -> dict[str, str]:
    """'a geography' / 'an algebra' for templates that put an article before a subject."""
    article = "an" if word[0].lower() in "aeiou" else "a"
    return {"a_course": f"{article} {word}", "A_course": f"{article.capitalize()} {word}"}


def _lead_in(rng: Rng, courses: Sequence[str]) -> str:
    """A framing sentence (a name and the subject), as exam items come from somewhere; it varies the wording."""
    course = _pick(rng, courses)
    return _pick(rng, _LEAD_INS).format(name=_pick(rng, NAMES), course=course, **_articles(course))


def _two_names(rng: Rng) -> tuple[str, str]:
    first, second = _sample(rng, NAMES, 2)
    return first, second


# ---------------------------------------------------------------------------------------------------------------------
# Fact banks: a fact (stem, correct option, three wrong options most attractive first, obscurity offset) and a
# category (members vs look-alikes), asked positively or with an EXCEPT / NOT qualifier.


@dataclass(frozen=True)
class _Fact:
    stems: tuple[str, ...]
    correct: str
    wrong: tuple[str, str, str]
    offset: float = 0.0


@dataclass(frozen=True)
class _Category:
    positive: tuple[str, ...]
    negative: tuple[str, ...]
    members: tuple[str, ...]  # most typical first
    others: tuple[str, ...]  # most member-like first
    offset: float = 0.0


def _ask_fact(rng: Rng, courses: Sequence[str], fact: _Fact) -> _Draft:
    stem = _pick(rng, fact.stems)
    return _Draft(f"{_lead_in(rng, courses)} {stem}", fact.correct, fact.wrong, fact.offset)


def _ask_category(rng: Rng, courses: Sequence[str], category: _Category) -> _Draft:
    """Positive: one member among look-alikes. Negative (EXCEPT/NOT): one look-alike among members, the least
    typical members being the most attractive wrong answers."""
    lead = _lead_in(rng, courses)
    if rng.random() < 0.5:
        correct = _pick(rng, category.members)
        picked = sorted(int(j) for j in rng.choice(len(category.others), size=3, replace=False))
        wrong = tuple(category.others[j] for j in picked)
        return _Draft(f"{lead} {_pick(rng, category.positive)}", correct, wrong, category.offset)
    correct = _pick(rng, category.others)
    picked = sorted((int(j) for j in rng.choice(len(category.members), size=3, replace=False)), reverse=True)
    wrong = tuple(category.members[j] for j in picked)
    return _Draft(f"{lead} {_pick(rng, category.negative)}", correct, wrong, category.offset + QUALIFIER_WEIGHT)


def _ask_bank(
    rng: Rng, courses: Sequence[str], facts: Sequence[_Fact], categories: Sequence[_Category], p_category: float
) -> _Draft:
    if categories and rng.random() < p_category:
        return _ask_category(rng, courses, _pick(rng, categories))
    return _ask_fact(rng, courses, _pick(rng, facts))


# =====================================================================================================================
# general: MMLU-like four-option questions.


def _general_elementary_mathematics(rng: Rng) -> _Draft:
    """Word problems of one to three operations; steps and size of the numbers are the visible complexity."""
    name, friend = _two_names(rng)
    thing = _pick(rng, THINGS)
    kind = int(rng.integers(4))
    if kind == 0:
        boxes, per = _int(rng, 3, 14), _int(rng, 4, 25)
        gold = boxes * per
        question = (
            f"{name} buys {boxes} boxes of {thing}, and each box holds {per} {thing}. "
            f"How many {thing} does {name} buy in all?"
        )
        candidates, steps = [gold + per, boxes + per, gold - per], 1
    elif kind == 1:
        each, friends = _int(rng, 2, 9), _int(rng, 2, 8)
        start = each * friends + _int(rng, 3, 80)
        gold = start - each * friends
        question = (
            f"{name} has {start} {thing} and gives {each} to each of {friends} friends, starting with {friend}. "
            f"How many {thing} does {name} have left?"
        )
        candidates, steps = [start - each, gold - each, start - each - friends], 2
    elif kind == 2:
        count, price, pen = _int(rng, 2, 6), _int(rng, 3, 19), _int(rng, 2, 9)
        total = count * price + pen
        bill = next(b for b in (20, 50, 100, 200) if b > total)
        gold = bill - total
        question = (
            f"{name} buys {count} notebooks at ${price} each and a pen for ${pen}, paying with a ${bill} bill. "
            f"How much change, in dollars, should {name} get back?"
        )
        candidates, steps = [bill - count * price, bill - price - pen, gold + price], 3
    else:
        den = _pick(rng, (2, 3, 4, 5, 6, 8, 10))
        num = _pick(rng, [n for n in range(1, den) if math.gcd(n, den) == 1])
        whole = den * _int(rng, 3, 40)
        gold = whole * num // den
        question = (
            f"{name} has {whole} {thing} and gives {num}/{den} of them to {friend}. How many {thing} does {friend} get?"
        )
        candidates, steps = [whole // den, whole - gold, gold + num], 1 + (num > 1)
    wrong = _numeric_wrong(gold, candidates)
    return _Draft(question, str(gold), wrong, 0.4 * (steps - 1) + _magnitude(gold, free=2, weight=0.3))


_CAPITALS = (
    ("Australia", "Canberra", ("Sydney", "Melbourne", "Perth"), 0.3),
    ("Canada", "Ottawa", ("Toronto", "Montreal", "Vancouver"), 0.2),
    ("Brazil", "Brasília", ("Rio de Janeiro", "São Paulo", "Salvador"), 0.3),
    ("Turkey", "Ankara", ("Istanbul", "Izmir", "Bursa"), 0.3),
    ("Nigeria", "Abuja", ("Lagos", "Kano", "Ibadan"), 0.5),
    ("Kenya", "Nairobi", ("Mombasa", "Kisumu", "Nakuru"), 0.1),
    ("Japan", "Tokyo", ("Osaka", "Kyoto", "Yokohama"), -0.4),
    ("Egypt", "Cairo", ("Alexandria", "Giza", "Luxor"), -0.3),
    ("Morocco", "Rabat", ("Casablanca", "Marrakesh", "Fez"), 0.5),
    ("New Zealand", "Wellington", ("Auckland", "Christchurch", "Dunedin"), 0.3),
    ("Switzerland", "Bern", ("Zurich", "Geneva", "Basel"), 0.4),
    ("Vietnam", "Hanoi", ("Ho Chi Minh City", "Da Nang", "Hue"), 0.2),
    ("Pakistan", "Islamabad", ("Karachi", "Lahore", "Rawalpindi"), 0.3),
    ("Myanmar", "Naypyidaw", ("Yangon", "Mandalay", "Bago"), 0.7),
    ("Tanzania", "Dodoma", ("Dar es Salaam", "Arusha", "Mwanza"), 0.8),
    ("Kazakhstan", "Astana", ("Almaty", "Shymkent", "Karaganda"), 0.6),
    ("Peru", "Lima", ("Cusco", "Arequipa", "Trujillo"), 0.0),
    ("Italy", "Rome", ("Milan", "Naples", "Turin"), -0.6),
    ("South Korea", "Seoul", ("Busan", "Incheon", "Daegu"), -0.3),
    ("Norway", "Oslo", ("Bergen", "Trondheim", "Stavanger"), -0.1),
    ("India", "New Delhi", ("Mumbai", "Kolkata", "Bengaluru"), -0.3),
    ("Argentina", "Buenos Aires", ("Córdoba", "Rosario", "Mendoza"), -0.2),
    ("Ghana", "Accra", ("Kumasi", "Tamale", "Takoradi"), 0.3),
)
_CAPITAL_STEMS = (
    "What is the capital city of {country}?",
    "Which city is the capital of {country}?",
    "The national government of {country} sits in which city?",
)
_RIVERS = (
    ("Vienna", "Danube", ("Rhine", "Elbe", "Vltava"), 0.0),
    ("Budapest", "Danube", ("Tisza", "Vistula", "Elbe"), 0.1),
    ("Paris", "Seine", ("Loire", "Rhône", "Thames"), -0.4),
    ("London", "Thames", ("Severn", "Seine", "Trent"), -0.5),
    ("Rome", "Tiber", ("Po", "Arno", "Danube"), 0.0),
    ("Prague", "Vltava", ("Danube", "Elbe", "Oder"), 0.5),
    ("Cairo", "Nile", ("Congo", "Niger", "Euphrates"), -0.5),
    ("Baghdad", "Tigris", ("Euphrates", "Jordan", "Indus"), 0.4),
    ("Bangkok", "Chao Phraya", ("Mekong", "Irrawaddy", "Salween"), 0.5),
    ("Warsaw", "Vistula", ("Oder", "Elbe", "Dnieper"), 0.3),
    ("Lisbon", "Tagus", ("Douro", "Ebro", "Guadalquivir"), 0.4),
    ("Montreal", "St. Lawrence", ("Hudson", "Niagara", "Fraser"), 0.3),
    ("Khartoum", "Nile", ("Congo", "Zambezi", "Niger"), 0.2),
    ("Saint Petersburg", "Neva", ("Volga", "Don", "Dnieper"), 0.5),
    ("Kyiv", "Dnieper", ("Don", "Volga", "Danube"), 0.3),
    ("New Orleans", "Mississippi", ("Missouri", "Ohio", "Rio Grande"), -0.1),
    ("Belgrade", "Danube", ("Drina", "Vardar", "Dnieper"), 0.3),
)
_RIVER_STEMS = ("Which river flows through {city}?", "The city of {city} lies on which river?")
_GEOGRAPHY_FACTS = (
    _Fact(
        ("The line of 0° longitude that passes through Greenwich is called the",),
        "Prime Meridian",
        ("Equator", "International Date Line", "Tropic of Cancer"),
        -0.3,
    ),
    _Fact(
        ("The Tropic of Capricorn lies at approximately which latitude?",),
        "23.4° S",
        ("23.4° N", "66.6° S", "0°"),
        0.3,
    ),
    _Fact(
        ("The fan-shaped deposit of sediment that builds up where a river enters the sea is called a",),
        "delta",
        ("estuary", "meander", "floodplain"),
        0.0,
    ),
    _Fact(
        ("Which ocean is the largest by surface area?", "Which is the largest of the world's oceans?"),
        "Pacific Ocean",
        ("Atlantic Ocean", "Indian Ocean", "Southern Ocean"),
        -0.6,
    ),
    _Fact(
        ("The movement of people from the countryside into towns and cities is called",),
        "urbanisation",
        ("counter-urbanisation", "suburbanisation", "gentrification"),
        0.0,
    ),
    _Fact(
        ("In the demographic transition model, which stage has high birth rates and rapidly falling death rates?",),
        "Stage 2",
        ("Stage 1", "Stage 3", "Stage 4"),
        0.6,
    ),
    _Fact(
        ("Which is the longest continental mountain range in the world?",),
        "Andes",
        ("Himalayas", "Rocky Mountains", "Ural Mountains"),
        0.3,
    ),
    _Fact(
        ("Which is the largest country in the world by area?",),
        "Russia",
        ("Canada", "China", "United States"),
        -0.4,
    ),
    _Fact(
        ("Which map projection preserves angles but makes Greenland look far larger than it is?",),
        "Mercator projection",
        ("Gall-Peters projection", "Robinson projection", "Mollweide projection"),
        0.5,
    ),
    _Fact(
        ("A boundary where two tectonic plates move away from each other is called a",),
        "divergent boundary",
        ("convergent boundary", "transform boundary", "subduction zone"),
        0.2,
    ),
)
_GEOGRAPHY_CATEGORIES = (
    _Category(
        ("Which of the following is a landlocked country?", "Which of the following countries has no coastline?"),
        ("All of the following countries are landlocked EXCEPT", "Which of the following countries is NOT landlocked?"),
        ("Switzerland", "Austria", "Mongolia", "Nepal", "Bolivia", "Paraguay", "Hungary", "Chad", "Mali", "Niger",
         "Ethiopia", "Kazakhstan", "Laos", "Zambia", "Uganda", "Afghanistan"),
        ("Myanmar", "Cambodia", "Slovenia", "Croatia", "Ecuador", "Peru", "Chile", "Guatemala", "Kenya",
         "Mozambique", "Bangladesh"),
        0.3,
    ),
    _Category(
        ("The equator passes through which of the following countries?",),
        ("The equator passes through all of the following countries EXCEPT",),
        ("Ecuador", "Brazil", "Kenya", "Indonesia", "Colombia", "Uganda", "Gabon", "Somalia",
         "Democratic Republic of the Congo", "Kiribati"),
        ("Venezuela", "Cameroon", "Tanzania", "Guyana", "Malaysia", "Ethiopia", "Nigeria", "Sri Lanka",
         "Philippines"),
        0.5,
    ),
    _Category(
        ("Which of the following countries is a member of the European Union?",),
        ("All of the following countries are members of the European Union EXCEPT",
         "Which of the following countries is NOT a member of the European Union?"),
        ("France", "Germany", "Spain", "Italy", "Poland", "Sweden", "Portugal", "Ireland", "Austria", "Finland",
         "Greece", "Estonia"),
        ("Norway", "Switzerland", "Iceland", "United Kingdom", "Serbia", "Turkey"),
        0.0,
    ),
    _Category(
        ("Which of the following countries is in South America?",),
        ("All of the following countries are in South America EXCEPT",),
        ("Brazil", "Argentina", "Chile", "Peru", "Colombia", "Venezuela", "Ecuador", "Bolivia", "Paraguay",
         "Uruguay", "Guyana", "Suriname"),
        ("Panama", "Costa Rica", "Nicaragua", "Honduras", "Guatemala", "Mexico", "Cuba"),
        -0.3,
    ),
)  # fmt: skip
_GEOGRAPHY_COURSES = ("geography", "world geography", "human geography")


def _general_high_school_geography(rng: Rng) -> _Draft:
    draw = rng.random()
    if draw < 0.3:
        country, capital, wrong, offset = _pick(rng, _CAPITALS)
        stem = _pick(rng, _CAPITAL_STEMS).format(country=country)
        return _Draft(f"{_lead_in(rng, _GEOGRAPHY_COURSES)} {stem}", capital, wrong, offset)
    if draw < 0.5:
        city, river, wrong, offset = _pick(rng, _RIVERS)
        stem = _pick(rng, _RIVER_STEMS).format(city=city)
        return _Draft(f"{_lead_in(rng, _GEOGRAPHY_COURSES)} {stem}", river, wrong, offset)
    return _ask_bank(rng, _GEOGRAPHY_COURSES, _GEOGRAPHY_FACTS, _GEOGRAPHY_CATEGORIES, 0.55)


_DEFICIENCIES = (
    ("vitamin C", "scurvy", ("rickets", "pellagra", "beriberi"), ("vitamin D", "vitamin A", "thiamine (vitamin B1)"),
     -0.3),
    ("vitamin D", "rickets", ("scurvy", "beriberi", "goitre"), ("vitamin C", "vitamin K", "niacin (vitamin B3)"), 0.0),
    ("thiamine (vitamin B1)", "beriberi", ("pellagra", "scurvy", "rickets"),
     ("niacin (vitamin B3)", "vitamin C", "vitamin D"), 0.5),
    ("niacin (vitamin B3)", "pellagra", ("beriberi", "scurvy", "kwashiorkor"),
     ("thiamine (vitamin B1)", "vitamin B12", "vitamin C"), 0.6),
    ("vitamin A", "night blindness", ("scurvy", "rickets", "pellagra"), ("vitamin D", "vitamin C", "vitamin K"), 0.1),
    ("iodine", "goitre", ("anaemia", "rickets", "scurvy"), ("iron", "calcium", "zinc"), 0.0),
    ("iron", "microcytic anaemia", ("megaloblastic anaemia", "goitre", "osteoporosis"),
     ("vitamin B12", "folate", "iodine"), 0.3),
    ("vitamin B12", "megaloblastic anaemia", ("microcytic anaemia", "pellagra", "goitre"),
     ("iron", "vitamin C", "niacin (vitamin B3)"), 0.6),
    ("vitamin K", "impaired blood clotting", ("night blindness", "scurvy", "rickets"),
     ("vitamin E", "vitamin C", "vitamin A"), 0.4),
)  # fmt: skip
_NUTRITION_FACTS = (
    _Fact(
        ("About how many kilocalories does one gram of dietary fat provide?",),
        "9 kcal",
        ("4 kcal", "7 kcal", "12 kcal"),
        -0.2,
    ),
    _Fact(
        ("Which mineral is the most abundant in the human body?",),
        "Calcium",
        ("Phosphorus", "Iron", "Sodium"),
        0.2,
    ),
    _Fact(
        ("Dietary fibre is best described as",),
        "plant carbohydrate that human digestive enzymes cannot break down",
        ("sugar that is absorbed in the small intestine", "a type of protein found mainly in meat",
         "a fat-soluble vitamin found in vegetables"),
        -0.1,
    ),
    _Fact(
        ("Which of these foods is the richest source of vitamin B12?",),
        "Beef liver",
        ("Spinach", "Brown rice", "Oranges"),
        0.1,
    ),
    _Fact(
        ("The glycaemic index ranks carbohydrate foods by",),
        "how quickly they raise blood glucose",
        ("their fibre content", "their energy per gram", "the quality of their protein"),
        0.2,
    ),
)  # fmt: skip
_NUTRITION_CATEGORIES = (
    _Category(
        ("Which of the following vitamins is fat-soluble?",),
        ("All of the following vitamins are fat-soluble EXCEPT", "Which of the following vitamins is NOT fat-soluble?"),
        ("vitamin A", "vitamin D", "vitamin E", "vitamin K"),
        ("vitamin C", "vitamin B12", "folate", "thiamine (vitamin B1)", "niacin (vitamin B3)"),
        0.1,
    ),
    _Category(
        ("Which of the following is an essential amino acid for adults?",),
        ("All of the following are essential amino acids for adults EXCEPT",),
        ("leucine", "lysine", "tryptophan", "phenylalanine", "valine", "methionine", "threonine", "isoleucine",
         "histidine"),
        ("alanine", "glycine", "serine", "aspartic acid", "glutamic acid"),
        0.6,
    ),
)  # fmt: skip
_NUTRITION_COURSES = ("nutrition", "nutrition science", "dietetics")
_MEALS = ("lunch", "breakfast", "snack", "dinner", "packed lunch", "smoothie bowl")


def _general_nutrition(rng: Rng) -> _Draft:
    draw = rng.random()
    lead = _lead_in(rng, _NUTRITION_COURSES)
    if draw < 0.3:
        nutrient, condition, wrong_conditions, wrong_nutrients, offset = _pick(rng, _DEFICIENCIES)
        if rng.random() < 0.5:
            stem = _pick(
                rng,
                (
                    f"A prolonged dietary deficiency of {nutrient} causes which condition?",
                    f"Which condition is classically caused by a lack of {nutrient}?",
                ),
            )
            return _Draft(f"{lead} {stem}", condition, wrong_conditions, offset)
        stem = f"{condition[0].upper()}{condition[1:]} is classically caused by a deficiency of which nutrient?"
        return _Draft(f"{lead} {stem}", nutrient, wrong_nutrients, offset + 0.2)
    if draw < 0.55:
        name = _pick(rng, NAMES)
        fat, protein, carbs = _int(rng, 2, 35), _int(rng, 2, 45), _int(rng, 5, 90)
        alcohol = _int(rng, 8, 20) if rng.random() < 0.4 else 0
        gold = 9 * fat + 4 * protein + 4 * carbs + 7 * alcohol
        meal = _pick(rng, _MEALS)
        text = f"{name}'s {meal} contains {fat} g of fat, {protein} g of protein and {carbs} g of carbohydrate"
        if alcohol:
            text += f", and the glass of wine with it adds {alcohol} g of alcohol"
        question = f"{text}. Approximately how many kilocalories does this provide in total?"
        candidates = [4 * (fat + protein + carbs) + 7 * alcohol, gold + 5 * protein, gold - 7 * alcohol + 9 * alcohol]
        wrong = _numeric_wrong(gold, candidates, fmt=lambda v: f"{_exact(v)} kcal")
        return _Draft(question, f"{gold} kcal", wrong, 0.3 + 0.4 * bool(alcohol) + _magnitude(gold, free=3))
    if draw < 0.7:
        name = _pick(rng, NAMES)
        weight = _int(rng, 48, 115)
        height = Fraction(_int(rng, 30, 39) * 5, 100)
        bmi = round(weight / float(height) ** 2, 1)
        question = (
            f"{name} weighs {weight} kg and is {float(height):.2f} m tall. What is {name}'s body mass index (BMI)?"
        )
        candidates = [round(weight / float(height) / 2, 1), round(weight / float(height), 1), round(bmi + 2.5, 1)]
        gold = f"{bmi:.1f} kg/m²"
        wrong = _three_wrong(gold, [f"{c:.1f} kg/m²" for c in candidates], lambda k: f"{bmi + 1.1 * k:.1f} kg/m²")
        return _Draft(question, gold, wrong, 0.4)
    return _ask_bank(rng, _NUTRITION_COURSES, _NUTRITION_FACTS, _NUTRITION_CATEGORIES, 0.5)


_COMPANY_PARTS = (
    ("North", "Blue", "Bright", "Silver", "Green", "Red", "Summit", "Nova", "Cedar", "Harbor", "Oak", "Lumen"),
    ("wave", "peak", "field", "line", "works", "craft", "stone", "leaf", "gate", "point", "forge", "bay"),
)
_PRODUCTS = (
    "smartphone", "electric scooter", "running shoe", "coffee machine", "games console", "streaming service",
    "skincare line", "laptop", "frozen pizza", "fitness tracker", "e-reader", "sparkling water",
)  # fmt: skip
_PRICING = (
    (
        "{co} launches its new {product} at a very high price aimed at early adopters and cuts the price step by "
        "step as rivals arrive.",
        "Price skimming",
        ("Premium pricing", "Penetration pricing", "Psychological pricing"),
        0.0,
    ),
    (
        "{co} enters the {product} market with a price well below its rivals' to win market share quickly, planning "
        "to raise the price later.",
        "Penetration pricing",
        ("Competitive pricing", "Price skimming", "Cost-plus pricing"),
        0.0,
    ),
    (
        "{co} sets the price of its {product} at ${whole}.99 rather than ${next}.00.",
        "Psychological pricing",
        ("Penetration pricing", "Competitive pricing", "Price skimming"),
        -0.2,
    ),
    (
        "{co} sells its {product} together with a one-year warranty and accessories for a single price that is lower "
        "than buying them separately.",
        "Bundle pricing",
        ("Captive-product pricing", "Psychological pricing", "Penetration pricing"),
        0.2,
    ),
)
_SEGMENTS = (
    ("Demographic", ("age and household income", "gender and family size", "occupation and education"),
     ("Psychographic", "Behavioural", "Geographic")),
    ("Geographic", ("country and climate zone", "urban versus rural location", "region and population density"),
     ("Demographic", "Behavioural", "Psychographic")),
    ("Psychographic", ("lifestyle and personal values", "personality traits and interests", "attitudes and opinions"),
     ("Behavioural", "Demographic", "Geographic")),
    ("Behavioural",
     ("how often customers buy and how loyal they are", "the benefits customers seek", "usage rate and occasion"),
     ("Psychographic", "Demographic", "Geographic")),
)  # fmt: skip
_LIFE_CYCLE = (
    ("sales of {co}'s newly launched {product} are low, profits are negative and most spending goes on making "
     "buyers aware of it", "Introduction", ("Growth", "Maturity", "Decline")),
    ("sales of {co}'s {product} are rising rapidly, profits are improving and new competitors are entering",
     "Growth", ("Introduction", "Maturity", "Decline")),
    ("sales of {co}'s {product} have stopped growing and competition is mainly on price", "Maturity",
     ("Decline", "Growth", "Introduction")),
    ("sales of {co}'s {product} fall year after year as buyers switch to newer alternatives", "Decline",
     ("Maturity", "Introduction", "Growth")),
)  # fmt: skip
_ANSOFF = (
    ("{co}, which sells its {product} at home, starts selling the same {product} in {market}.", "Market development",
     ("Product development", "Market penetration", "Diversification")),
    ("{co} designs a new version of its {product} with extra features for its existing customers.",
     "Product development", ("Market development", "Diversification", "Market penetration")),
    ("{co} uses loyalty discounts and heavier advertising to sell more of its existing {product} to its current "
     "customers.", "Market penetration", ("Market development", "Product development", "Diversification")),
    ("{co}, a {product} maker, launches a chain of hotels in {market}.", "Diversification",
     ("Market development", "Product development", "Market penetration")),
)  # fmt: skip
_MARKETS = ("Brazil", "Japan", "Germany", "India", "South Africa", "Canada", "Indonesia", "Mexico", "Poland", "Egypt")
_MARKETING_CATEGORIES = (
    _Category(
        ("Which of the following is one of the four Ps of the marketing mix?",),
        ("Which of the following is NOT one of the four Ps of the marketing mix?",
         "All of the following belong to the four Ps of the marketing mix EXCEPT"),
        ("Product", "Price", "Promotion", "Place"),
        ("Positioning", "Packaging", "Profit", "Persuasion"),
        -0.2,
    ),
)  # fmt: skip
_MARKETING_COURSES = ("marketing", "business studies", "marketing management")


def _general_marketing(rng: Rng) -> _Draft:
    company = f"{_pick(rng, _COMPANY_PARTS[0])}{_pick(rng, _COMPANY_PARTS[1])}"
    product = _pick(rng, _PRODUCTS)
    draw = rng.random()
    if draw < 0.3:
        template, correct, wrong, offset = _pick(rng, _PRICING)
        whole = _int(rng, 9, 899)
        scene = template.format(co=company, product=product, whole=whole, next=whole + 1)
        return _Draft(f"{scene} Which pricing strategy is this?", correct, wrong, offset)
    if draw < 0.5:
        segment, bases, confusions = _pick(rng, _SEGMENTS)
        question = (
            f"{company} groups the buyers of its {product} by {_pick(rng, bases)}. "
            "Which kind of market segmentation is this?"
        )
        return _Draft(question, segment, confusions, 0.1)
    if draw < 0.7:
        template, correct, wrong = _pick(rng, _LIFE_CYCLE)
        scene = template.format(co=company, product=product)
        question = f"Market data show that {scene}. Which stage of the product life cycle is this {product} in?"
        return _Draft(question, correct, wrong, 0.1)
    if draw < 0.88:
        template, correct, wrong = _pick(rng, _ANSOFF)
        scene = template.format(co=company, product=product, market=_pick(rng, _MARKETS))
        return _Draft(f"{scene} In the Ansoff matrix, which growth strategy is this?", correct, wrong, 0.4)
    return _ask_category(rng, _MARKETING_COURSES, _MARKETING_CATEGORIES[0])


_HISTORY_YEARS = (
    ("the signing of Magna Carta", 1215, 0.2),
    ("the fall of Constantinople to the Ottoman Turks", 1453, 0.3),
    ("the storming of the Bastille", 1789, -0.2),
    ("the Peace of Westphalia", 1648, 0.6),
    ("the outbreak of the First World War", 1914, -0.6),
    ("the fall of the Berlin Wall", 1989, -0.4),
    ("the Meiji Restoration in Japan", 1868, 0.6),
    ("Columbus's first voyage across the Atlantic", 1492, -0.4),
    ("the Battle of Hastings", 1066, 0.0),
    ("the end of the Second World War", 1945, -0.6),
    ("the October Revolution in Russia", 1917, 0.0),
    ("the independence of India from British rule", 1947, 0.0),
    ("the signing of the Treaty of Versailles", 1919, 0.1),
    ("the proclamation of the German Empire at Versailles", 1871, 0.5),
    ("the Glorious Revolution in England", 1688, 0.7),
    ("Martin Luther's posting of the Ninety-five Theses", 1517, 0.3),
    ("the founding of the People's Republic of China", 1949, 0.2),
    ("the start of the Haitian Revolution", 1791, 0.8),
    ("the sack of Rome by the Visigoths", 410, 0.9),
)
_HISTORY_YEAR_STEMS = (
    "In which year did {event} take place?",
    "Historians date {event} to which year?",
    "{Event} happened in which year?",
)
_HISTORY_FACTS = (
    _Fact(
        ("Which empire was ruled by Suleiman the Magnificent?",),
        "The Ottoman Empire",
        ("The Safavid Empire", "The Mughal Empire", "The Byzantine Empire"),
        0.2,
    ),
    _Fact(
        ("Who was the first emperor of a unified China?",),
        "Qin Shi Huang",
        ("Emperor Wu of Han", "Kublai Khan", "Sun Yat-sen"),
        0.3,
    ),
    _Fact(
        ("The Marshall Plan is best described as",),
        "American economic aid to rebuild Western Europe after the Second World War",
        ("a Soviet programme for collectivising agriculture", "a British plan to defend its colonies in Asia",
         "a French proposal for a common European army"),
        0.1,
    ),
    _Fact(
        ("Which city was the capital of the Byzantine Empire?",),
        "Constantinople",
        ("Rome", "Athens", "Antioch"),
        -0.1,
    ),
    _Fact(
        ("The Columbian Exchange refers to",),
        "the transfer of plants, animals and diseases between the Americas and the rest of the world after 1492",
        ("a trade agreement between Spain and Portugal", "the exchange of ambassadors between Europe and China",
         "the swap of colonies at the end of the Seven Years' War"),
        0.3,
    ),
    _Fact(
        ("Who led the slave revolt that began the Haitian Revolution and became its best-known leader?",),
        "Toussaint Louverture",
        ("Simón Bolívar", "José de San Martín", "Miguel Hidalgo"),
        0.6,
    ),
    _Fact(
        ("Most of the Great Wall of China as it stands today was built under which dynasty?",),
        "Ming",
        ("Qin", "Han", "Tang"),
        0.5,
    ),
    _Fact(
        ("The Treaty of Tordesillas divided newly explored lands outside Europe between",),
        "Spain and Portugal",
        ("England and France", "Spain and England", "Portugal and the Dutch Republic"),
        0.5,
    ),
)  # fmt: skip
_HISTORY_CATEGORIES = (
    _Category(
        ("Which of the following was one of the major Allied Powers in the Second World War?",),
        ("All of the following were Allied Powers in the Second World War EXCEPT",),
        ("the United States", "the United Kingdom", "the Soviet Union", "China"),
        ("Germany", "Japan", "Italy", "Hungary"),
        0.0,
    ),
    _Category(
        ("Which of the following was a founding member of the Triple Entente?",),
        ("All of the following were members of the Triple Entente EXCEPT",),
        ("France", "the United Kingdom", "Russia"),
        ("Italy", "Austria-Hungary", "Germany", "the Ottoman Empire"),
        0.4,
    ),
)
_HISTORY_COURSES = ("world history", "European history", "modern history")


def _general_world_history(rng: Rng) -> _Draft:
    if rng.random() < 0.45:
        event, year, offset = _pick(rng, _HISTORY_YEARS)
        stem = _pick(rng, _HISTORY_YEAR_STEMS).format(event=event, Event=event[0].upper() + event[1:])
        near, mid, far = _int(rng, 1, 6), _int(rng, 10, 40), _int(rng, 50, 150)
        years = [year + d * (1 if rng.random() < 0.5 else -1) for d in (near, mid, far)]
        wrong = _numeric_wrong(year, years)
        return _Draft(f"{_lead_in(rng, _HISTORY_COURSES)} {stem}", str(year), wrong, offset + 0.3 * (near <= 3))
    return _ask_bank(rng, _HISTORY_COURSES, _HISTORY_FACTS, _HISTORY_CATEGORIES, 0.35)


_BIOLOGY_FACTS = (
    _Fact(
        ("Which organelle is the main site of aerobic respiration and ATP production in eukaryotic cells?",),
        "Mitochondrion",
        ("Chloroplast", "Ribosome", "Golgi apparatus"),
        -0.3,
    ),
    _Fact(
        ("At which cell structure are amino acids joined into proteins?",),
        "Ribosome",
        ("Golgi apparatus", "Lysosome", "Smooth endoplasmic reticulum"),
        -0.1,
    ),
    _Fact(
        ("Which organelle modifies, sorts and packages proteins for secretion?",),
        "Golgi apparatus",
        ("Rough endoplasmic reticulum", "Lysosome", "Nucleolus"),
        0.2,
    ),
    _Fact(
        ("Which organelle contains digestive enzymes that break down worn-out cell components?",),
        "Lysosome",
        ("Peroxisome", "Golgi apparatus", "Ribosome"),
        0.2,
    ),
    _Fact(
        ("Where in a plant cell does photosynthesis take place?",),
        "Chloroplast",
        ("Mitochondrion", "Central vacuole", "Cell wall"),
        -0.4,
    ),
    _Fact(
        ("During which phase of mitosis do sister chromatids separate and move to opposite poles of the cell?",),
        "Anaphase",
        ("Metaphase", "Telophase", "Prophase"),
        0.3,
    ),
    _Fact(
        ("Which molecule carries amino acids to the ribosome during translation?",),
        "Transfer RNA (tRNA)",
        ("Messenger RNA (mRNA)", "Ribosomal RNA (rRNA)", "DNA polymerase"),
        0.3,
    ),
    _Fact(
        ("In double-stranded DNA, adenine pairs with",),
        "thymine",
        ("uracil", "guanine", "cytosine"),
        -0.2,
    ),
    _Fact(
        ("Which blood cells carry most of the oxygen in the blood?",),
        "Red blood cells",
        ("White blood cells", "Platelets", "Plasma cells"),
        -0.6,
    ),
    _Fact(
        ("The net movement of water across a partially permeable membrane towards the more concentrated solution is",),
        "osmosis",
        ("active transport", "facilitated diffusion of solutes", "endocytosis"),
        0.0,
    ),
)
_BIOLOGY_CATEGORIES = (
    _Category(
        ("Which of the following is a prokaryote?", "Which of the following organisms lacks a nucleus?"),
        ("All of the following are prokaryotes EXCEPT", "Which of the following is NOT a prokaryote?"),
        ("Escherichia coli", "Streptococcus pneumoniae", "a cyanobacterium", "a methanogenic archaeon",
         "Bacillus subtilis"),
        ("baker's yeast", "an amoeba", "Paramecium", "a green alga such as Chlamydomonas", "a mushroom"),
        0.2,
    ),
    _Category(
        ("Which of the following structures is found in both plant and animal cells?",),
        ("All of the following are found in both plant and animal cells EXCEPT",),
        ("a nucleus", "ribosomes", "mitochondria", "a cell membrane", "a Golgi apparatus",
         "endoplasmic reticulum"),
        ("chloroplasts", "a cellulose cell wall", "a large central vacuole"),
        0.0,
    ),
)  # fmt: skip
_BIOLOGY_COURSES = ("biology", "high school biology", "life science")
_TRAITS = (
    ("pea plant", "tall stems", "short stems", "T"),
    ("pea plant", "purple flowers", "white flowers", "P"),
    ("guinea pig", "black fur", "white fur", "B"),
    ("tomato plant", "red fruit", "yellow fruit", "R"),
    ("rabbit", "brown fur", "white fur", "W"),
)
# (parent 1, parent 2, what is asked, gold, wrong answers most attractive first, extra complexity)
_MONOHYBRID = (
    ("Aa", "Aa", "recessive", Fraction(1, 4), ("1/2", "3/4", "1/3"), 0.0),
    ("Aa", "Aa", "dominant", Fraction(3, 4), ("1/2", "1/4", "2/3"), 0.0),
    ("Aa", "Aa", "heterozygous", Fraction(1, 2), ("2/3", "1/4", "3/4"), 0.3),
    ("Aa", "aa", "recessive", Fraction(1, 2), ("1/4", "3/4", "0"), 0.1),
    ("AA", "aa", "recessive", Fraction(0), ("1/4", "1/2", "3/4"), 0.1),
)
_DIHYBRID = (
    ("RrYy", "RrYy", "round, yellow seeds", Fraction(9, 16), ("3/16", "3/4", "1/4"), 0.6),
    ("RrYy", "RrYy", "wrinkled, green seeds", Fraction(1, 16), ("1/4", "3/16", "9/16"), 0.6),
    ("RrYy", "RrYy", "round, green seeds", Fraction(3, 16), ("9/16", "1/16", "1/4"), 0.8),
    ("RrYy", "rryy", "wrinkled, green seeds", Fraction(1, 4), ("1/16", "1/2", "9/16"), 0.7),
)


def _general_high_school_biology(rng: Rng) -> _Draft:
    draw = rng.random()
    if draw < 0.4:
        return _with_lead_in(_biology_cross, _BIOLOGY_COURSES)(rng)
    return _ask_bank(rng, _BIOLOGY_COURSES, _BIOLOGY_FACTS, _BIOLOGY_CATEGORIES, 0.4)


def _biology_cross(rng: Rng) -> _Draft:
    """Mendelian crosses: a dihybrid cross is visibly more work than a monohybrid one."""
    name = _pick(rng, NAMES)
    if rng.random() < 0.7:
        organism, dominant, recessive, letter = _pick(rng, _TRAITS)
        first, second, asked, gold, wrong, extra = _pick(rng, _MONOHYBRID)
        geno = {"A": letter, "a": letter.lower()}
        first = "".join(geno[c] for c in first)
        second = "".join(geno[c] for c in second)
        target = {
            "recessive": recessive,
            "dominant": dominant,
            "heterozygous": f"the genotype {letter}{letter.lower()}",
        }[asked]
        question = (
            f"In the {organism}, the allele for {dominant} ({letter}) is completely dominant over the allele for "
            f"{recessive} ({letter.lower()}). {name} crosses a {first} {organism} with a {second} one. "
            f"What fraction of the offspring are expected to have {target}?"
        )
        return _Draft(question, _ratio(gold), wrong, extra)
    first, second, asked, gold, wrong, extra = _pick(rng, _DIHYBRID)
    question = (
        f"In garden peas, round seeds (R) are dominant over wrinkled seeds (r) and yellow seeds (Y) are dominant "
        f"over green seeds (y), and the two genes assort independently. {name} crosses a {first} plant with a "
        f"{second} plant. What fraction of the offspring are expected to have {asked}?"
    )
    return _Draft(question, _ratio(gold), wrong, extra)


_SUBSTANCES = (
    ("water", "H2O", Fraction(18)),
    ("sodium chloride", "NaCl", Fraction(117, 2)),
    ("carbon dioxide", "CO2", Fraction(44)),
    ("sodium hydroxide", "NaOH", Fraction(40)),
    ("calcium carbonate", "CaCO3", Fraction(100)),
    ("glucose", "C6H12O6", Fraction(180)),
    ("methane", "CH4", Fraction(16)),
    ("sulfuric acid", "H2SO4", Fraction(98)),
)
_CHEMISTRY_FACTS = (
    _Fact(
        ("Which type of bond forms when electrons are transferred from a metal atom to a non-metal atom?",),
        "Ionic bond",
        ("Covalent bond", "Metallic bond", "Hydrogen bond"),
        -0.3,
    ),
    _Fact(
        ("The Avogadro constant is approximately",),
        "6.02 × 10^23 per mole",
        ("6.63 × 10^-34 per mole", "3.00 × 10^8 per mole", "1.60 × 10^-19 per mole"),
        0.0,
    ),
    _Fact(
        ("Which element has atomic number 6?",),
        "Carbon",
        ("Nitrogen", "Boron", "Oxygen"),
        -0.1,
    ),
    _Fact(
        ("Two isotopes of the same element differ in their number of",),
        "neutrons",
        ("protons", "electrons", "electron shells"),
        0.0,
    ),
    _Fact(
        ("A catalyst speeds up a chemical reaction by",),
        "providing a pathway with a lower activation energy",
        ("raising the temperature of the mixture", "shifting the equilibrium towards the products",
         "increasing the concentration of the reactants"),
        0.3,
    ),
)  # fmt: skip
_CHEMISTRY_CATEGORIES = (
    _Category(
        ("Which of the following elements is a noble gas?",),
        ("All of the following elements are noble gases EXCEPT",),
        ("helium", "neon", "argon", "krypton", "xenon"),
        ("nitrogen", "fluorine", "hydrogen", "oxygen", "chlorine"),
        -0.2,
    ),
    _Category(
        ("Which of the following elements is an alkali metal?",),
        ("All of the following elements are alkali metals EXCEPT", "Which of the following is NOT an alkali metal?"),
        ("sodium", "potassium", "lithium", "rubidium", "caesium"),
        ("calcium", "magnesium", "aluminium", "barium", "hydrogen"),
        0.1,
    ),
    _Category(
        ("Which of the following elements is a halogen?",),
        ("All of the following elements are halogens EXCEPT",),
        ("chlorine", "fluorine", "bromine", "iodine"),
        ("oxygen", "sulfur", "neon", "nitrogen", "hydrogen"),
        0.0,
    ),
)
_CHEMISTRY_COURSES = ("chemistry", "high school chemistry", "physical science")
_ACIDS = (("hydrochloric acid", "HCl"), ("nitric acid", "HNO3"))
_BASES = (("sodium hydroxide", "NaOH"), ("potassium hydroxide", "KOH"))


def _concentration(power: int) -> str:
    return _exact(Fraction(1, 10**power))


def _general_high_school_chemistry(rng: Rng) -> _Draft:
    draw = rng.random()
    lead = _lead_in(rng, _CHEMISTRY_COURSES)
    if draw < 0.3:
        power = _int(rng, 1, 4)
        if rng.random() < 0.5:
            acid, formula = _pick(rng, _ACIDS)
            dilution = _int(rng, 0, 2)
            text = f"A solution of {acid} ({formula}) has a concentration of {_concentration(power)} mol/L"
            if dilution:
                text += f" and is then diluted by a factor of {10**dilution} with pure water"
            gold = power + dilution
            question = f"{lead} {text}. Assuming complete dissociation at 25 °C, what is its pH?"
            wrong = _numeric_wrong(gold, [power if dilution else gold + 1, 14 - gold, gold + 2], fmt=str)
            return _Draft(question, str(gold), wrong, 0.4 * bool(dilution))
        base, formula = _pick(rng, _BASES)
        gold = 14 - power
        question = (
            f"{lead} What is the pH at 25 °C of a {_concentration(power)} mol/L solution of {base} ({formula}), "
            "assuming complete dissociation?"
        )
        return _Draft(question, str(gold), _numeric_wrong(gold, [power, gold - 1, 7 + power], fmt=str), 0.4)
    if draw < 0.55:
        substance, formula, molar = _pick(rng, _SUBSTANCES)
        moles = Fraction(_pick(rng, (1, 2, 3, 4, 5, 6, 8, 10, 12, 15)), _pick(rng, (1, 2, 4)))
        mass = moles * molar
        unit = " mol"
        if rng.random() < 0.5:
            question = f"{lead} How many moles are there in {_exact(mass)} g of {substance} ({formula})?"
            candidates = [moles * 2, molar / mass, moles / 2, moles + 1]
            wrong = _numeric_wrong(moles, candidates, fmt=lambda v: f"{_exact(v)}{unit}")
            return _Draft(question, f"{_exact(moles)}{unit}", wrong, 0.2 + _magnitude(molar, free=2, weight=0.2))
        question = f"{lead} What is the mass of {_exact(moles)} mol of {substance} ({formula})?"
        candidates = [molar / moles, mass / 2, mass + molar]
        wrong = _numeric_wrong(mass, candidates, fmt=lambda v: f"{_exact(v)} g")
        return _Draft(question, f"{_exact(mass)} g", wrong, 0.1 + _magnitude(mass, free=2, weight=0.2))
    return _ask_bank(rng, _CHEMISTRY_COURSES, _CHEMISTRY_FACTS, _CHEMISTRY_CATEGORIES, 0.5)


_CLINICAL_FACTS = (
    _Fact(
        ("What is the normal resting heart rate range for a healthy adult?",),
        "60-100 beats per minute",
        ("40-60 beats per minute", "100-140 beats per minute", "120-160 beats per minute"),
        -0.3,
    ),
    _Fact(
        ("What is the normal respiratory rate of a healthy adult at rest?",),
        "12-20 breaths per minute",
        ("20-30 breaths per minute", "6-10 breaths per minute", "30-40 breaths per minute"),
        0.0,
    ),
    _Fact(
        ("The total Glasgow Coma Scale score can range from",),
        "3 to 15",
        ("0 to 15", "3 to 12", "1 to 10"),
        0.2,
    ),
    _Fact(
        ("What rate of chest compressions is recommended during adult cardiopulmonary resuscitation?",),
        "100-120 per minute",
        ("80-100 per minute", "60-80 per minute", "120-150 per minute"),
        0.1,
    ),
    _Fact(
        ("What compression-to-ventilation ratio is recommended for adult CPR by a single rescuer?",),
        "30:2",
        ("15:2", "30:1", "5:1"),
        0.0,
    ),
    _Fact(
        ("Which vein in the antecubital fossa is most commonly used for venepuncture?",),
        "Median cubital vein",
        ("Cephalic vein", "Basilic vein", "Great saphenous vein"),
        0.4,
    ),
    _Fact(
        ("Which pulse is felt at the wrist on the thumb side?",),
        "Radial pulse",
        ("Ulnar pulse", "Brachial pulse", "Carotid pulse"),
        -0.3,
    ),
    _Fact(
        ("Where is the apex beat of a healthy adult heart normally palpated?",),
        "Fifth left intercostal space, midclavicular line",
        ("Second right intercostal space, sternal edge", "Fourth left intercostal space, anterior axillary line",
         "Seventh left intercostal space, mid-axillary line"),
        0.5,
    ),
)  # fmt: skip
_CLINICAL_CATEGORIES = (
    _Category(
        ("Which of the following is one of the components scored in the Glasgow Coma Scale?",),
        ("Which of the following is NOT one of the components of the Glasgow Coma Scale?",
         "The Glasgow Coma Scale assesses all of the following EXCEPT"),
        ("eye opening", "verbal response", "motor response"),
        ("pupil reaction to light", "blood pressure", "respiratory rate", "pain score"),
        0.3,
    ),
)  # fmt: skip
_CLINICAL_COURSES = ("clinical skills", "nursing", "medicine")


def _general_clinical_knowledge(rng: Rng) -> _Draft:
    draw = rng.random()
    name = _pick(rng, NAMES)
    if draw < 0.2:
        diastolic = _int(rng, 60, 105)
        systolic = diastolic + 3 * _int(rng, 10, 25)
        gold = diastolic + (systolic - diastolic) // 3
        question = (
            f"A patient, {name}, has a blood pressure of {systolic}/{diastolic} mmHg. Using the usual bedside "
            "approximation, what is the mean arterial pressure?"
        )
        candidates = [(systolic + diastolic) // 2, systolic - diastolic, systolic - (systolic - diastolic) // 3]
        return _Draft(
            question, f"{gold} mmHg", _numeric_wrong(gold, candidates, fmt=lambda v: f"{_exact(v)} mmHg"), 0.5
        )
    if draw < 0.4:
        weight = 5 * _int(rng, 8, 24)
        dose = _pick(rng, (2, 4, 5, 10, 15))
        strength = _pick(rng, (10, 20, 25, 50))
        gold = Fraction(weight * dose, strength)
        question = (
            f"{name}, who weighs {weight} kg, is prescribed a drug at {dose} mg/kg. The drug is supplied as "
            f"{strength} mg/mL. What volume should be given?"
        )
        candidates = [gold * 10, Fraction(weight * strength, dose), gold / 2]
        wrong = _numeric_wrong(gold, candidates, fmt=lambda v: f"{_exact(v)} mL")
        return _Draft(question, f"{_exact(gold)} mL", wrong, 0.7 + _magnitude(weight * dose, free=3, weight=0.2))
    return _ask_bank(rng, _CLINICAL_COURSES, _CLINICAL_FACTS, _CLINICAL_CATEGORIES, 0.2)


_PHYSICS_OBJECTS = ("stone", "steel ball", "wrench", "water balloon", "tennis ball", "bolt")
_PLATFORMS = ("bridge", "cliff", "balcony", "tower", "crane", "rooftop")
_GASES = ("helium", "argon", "nitrogen", "neon", "oxygen", "carbon dioxide")
_RESISTOR_PAIRS = ((6, 3), (12, 6), (20, 5), (10, 10), (4, 12), (30, 15), (12, 4), (60, 30), (8, 8), (18, 9))


def _general_college_physics(rng: Rng) -> _Draft:
    kind = int(rng.integers(5))
    name = _pick(rng, NAMES)
    if kind == 0:
        seconds = _int(rng, 1, 7)
        height = 5 * seconds**2
        thing = _pick(rng, _PHYSICS_OBJECTS)
        question = (
            f"{name} drops a {thing} from rest from a {_pick(rng, _PLATFORMS)} {height} m above the ground. Ignoring "
            "air resistance and taking g = 10 m/s^2, how long does it take to reach the ground?"
        )
        candidates = [2 * seconds, Fraction(height, 10), seconds + 1]
        wrong = _numeric_wrong(seconds, candidates, fmt=lambda v: f"{_exact(v)} s")
        return _Draft(question, f"{seconds} s", wrong, 0.3)
    if kind == 1:
        first, second = _pick(rng, _RESISTOR_PAIRS)
        parallel = Fraction(first * second, first + second)
        if rng.random() < 0.5:
            question = (
                f"{name} connects resistors of {first} Ω and {second} Ω in parallel. What is their equivalent "
                "resistance?"
            )
            gold, candidates, extra = parallel, [first + second, Fraction(first + second, 2), first * second], 0.0
        else:
            series = _int(rng, 2, 20)
            question = (
                f"In {name}'s circuit, a {series} Ω resistor is connected in series with a parallel combination of "
                f"{first} Ω and {second} Ω resistors. What is the equivalent resistance of the whole network?"
            )
            gold = series + parallel
            candidates, extra = [series + first + second, parallel, series + Fraction(first + second, 2)], 0.5
        wrong = _numeric_wrong(gold, candidates, fmt=lambda v: f"{_exact(v)} Ω")
        return _Draft(question, f"{_exact(gold)} Ω", wrong, extra)
    if kind == 2:
        mass, speed = _int(rng, 2, 40), _int(rng, 2, 30)
        gold = Fraction(mass * speed**2, 2)
        question = f"{name} pushes a {mass} kg cart so that it moves at {speed} m/s. What is its kinetic energy?"
        candidates = [mass * speed**2, Fraction(mass * speed, 2), mass * speed]
        wrong = _numeric_wrong(gold, candidates, fmt=lambda v: f"{_exact(v)} J")
        return _Draft(question, f"{_exact(gold)} J", wrong, _magnitude(gold, free=3))
    if kind == 3:
        moving, resting = _int(rng, 1, 9), _int(rng, 1, 9)
        speed = (moving + resting) * _int(rng, 1, 4)
        gold = Fraction(moving * speed, moving + resting)
        question = (
            f"On {name}'s air track, a {moving} kg glider moving at {speed} m/s collides with a stationary "
            f"{resting} kg glider, and the two stick together. What is their common speed just after the collision?"
        )
        candidates = [Fraction(speed, 2), Fraction(resting * speed, moving + resting), speed]
        wrong = _numeric_wrong(gold, candidates, fmt=lambda v: f"{_exact(v)} m/s")
        return _Draft(question, f"{_exact(gold)} m/s", wrong, 0.6)
    t_factor, v_factor = _pick(rng, (2, 3, 4)), _pick(rng, (2, 3, 4))
    if rng.random() < 0.5:
        volume = "doubled" if v_factor == 2 else f"multiplied by {v_factor}"
        gold, other = Fraction(t_factor, v_factor), Fraction(t_factor * v_factor)
    else:
        volume = "halved" if v_factor == 2 else f"divided by {v_factor}"
        gold, other = Fraction(t_factor * v_factor), Fraction(t_factor, v_factor)
    question = (
        f"In {name}'s experiment, the absolute temperature of a sealed sample of {_pick(rng, _GASES)}, treated as an "
        f"ideal gas, is multiplied by {t_factor} while its volume is {volume}. By what factor does its pressure change?"
    )
    wrong = _numeric_wrong(gold, [other, t_factor, t_factor + v_factor])
    return _Draft(question, _exact(gold), wrong, 0.5)


_ATOMS = (
    ("the train is late", "the train is not late"),
    ("{n} misses the meeting", "{n} does not miss the meeting"),
    ("the reactor overheats", "the reactor does not overheat"),
    ("the shop is open", "the shop is not open"),
    ("it rains", "it does not rain"),
    ("the match is cancelled", "the match is not cancelled"),
    ("{n} passes the exam", "{n} does not pass the exam"),
    ("the alarm sounds", "the alarm does not sound"),
    ("the bridge is closed", "the bridge is not closed"),
    ("{n} wins the election", "{n} does not win the election"),
    ("the price of copper rises", "the price of copper does not rise"),
    ("the software compiles", "the software does not compile"),
    ("the river floods", "the river does not flood"),
    ("{n} is in Lisbon", "{n} is not in Lisbon"),
    ("the museum is crowded", "the museum is not crowded"),
    ("the harvest fails", "the harvest does not fail"),
)
_FORM_NAMES = (
    "valid, by modus ponens",
    "valid, by modus tollens",
    "invalid: it affirms the consequent",
    "invalid: it denies the antecedent",
)
_KINDS = (("dog", "dogs", "D"), ("philosopher", "philosophers", "P"), ("student", "students", "S"),
          ("musician", "musicians", "M"), ("farmer", "farmers", "F"), ("lawyer", "lawyers", "L"))  # fmt: skip
_PROPERTIES = (("barks", "bark", "B"), ("reads poetry", "read poetry", "R"), ("likes chess", "like chess", "C"),
               ("speaks Greek", "speak Greek", "G"), ("owns a bicycle", "own a bicycle", "O"),
               ("wears a hat", "wear hats", "H"), ("keeps bees", "keep bees", "K"))  # fmt: skip
_CONNECTIVES = ("•", "∨", "⊃", "≡")


def _sentence(text: str) -> str:
    return f"{text[0].upper()}{text[1:]}."


def _random_formula(rng: Rng, letters: Sequence[str]) -> str:
    """A well-formed formula using every letter exactly once, joined by random connectives."""
    parts = [f"~{letter}" if rng.random() < 0.3 else letter for letter in letters]
    while len(parts) > 1:
        at = int(rng.integers(len(parts) - 1))
        parts[at : at + 2] = [f"({parts[at]} {_pick(rng, _CONNECTIVES)} {parts[at + 1]})"]
    formula = parts[0]
    return formula[1:-1] if formula.startswith("(") else formula


def _general_formal_logic(rng: Rng) -> _Draft:
    name = _pick(rng, NAMES)
    atoms = [(pos.format(n=name), neg.format(n=name)) for pos, neg in _sample(rng, _ATOMS, 3)]
    (p, not_p), (q, not_q), (r, not_r) = atoms
    kind = int(rng.integers(5))
    if kind == 0:
        form = int(rng.integers(4))
        stem = "Which conclusion follows validly from these premises?"
        nothing = f"Nothing follows about whether {p}."
        if form == 0:
            premises, gold, wrong, extra = (
                (f"if {p}, then {q}", p),
                _sentence(q),
                (_sentence(not_q), nothing, _sentence(not_p)),
                0.0,
            )
        elif form == 1:
            premises, gold, wrong, extra = (
                (f"if {p}, then {q}", not_q),
                _sentence(not_p),
                (nothing, _sentence(p), _sentence(q)),
                0.4,
            )
        elif form == 2:
            premises, gold, wrong, extra = (
                (f"either {p} or {q}", not_p),
                _sentence(q),
                (_sentence(not_q), nothing, _sentence(p)),
                0.2,
            )
        else:
            premises, gold, wrong, extra = (
                (f"if {p}, then {q}", f"if {q}, then {r}"),
                f"If {p}, then {r}.",
                (f"If {r}, then {p}.", f"If {not_p}, then {not_r}.", f"{_sentence(p)[:-1]} and {r}."),
                0.5,
            )
        question = f"Premise 1: {_sentence(premises[0])} Premise 2: {_sentence(premises[1])} {stem}"
        return _Draft(question, gold, wrong, extra)
    if kind == 1:
        form = int(rng.integers(4))
        second, conclusion = ((p, q), (not_q, not_p), (q, p), (not_p, not_q))[form]
        question = (
            f"Consider the argument: 'If {p}, then {q}. {_sentence(second)} Therefore, {conclusion}.' "
            "Which description of this argument is correct?"
        )
        others = {0: (3, 2, 1), 1: (2, 3, 0), 2: (0, 3, 1), 3: (1, 0, 2)}[form]
        wrong = tuple(_FORM_NAMES[j] for j in others)
        return _Draft(question, _FORM_NAMES[form], wrong, 0.3 + 0.3 * (form >= 2))
    if kind == 2:
        form = int(rng.integers(3))
        if form == 0:
            claim = f"It is not the case that both {p} and {q}"
            gold = f"Either {not_p} or {not_q}."
            wrong = (f"{_sentence(not_p)[:-1]} and {not_q}.", f"Either {p} or {q}.", f"If {p}, then {q}.")
        elif form == 1:
            claim = f"It is not the case that either {p} or {q}"
            gold = f"{_sentence(not_p)[:-1]} and {not_q}."
            wrong = (f"Either {not_p} or {not_q}.", f"{_sentence(p)[:-1]} and {not_q}.", f"If {not_p}, then {q}.")
        else:
            claim = f"If {p}, then {q}"
            gold = f"If {not_q}, then {not_p}."
            wrong = (f"If {q}, then {p}.", f"If {not_p}, then {not_q}.", f"{_sentence(p)[:-1]} and {not_q}.")
        question = f"Which statement is logically equivalent to '{claim}'?"
        return _Draft(question, gold, wrong, 0.4 + 0.2 * (form < 2))
    if kind == 3:
        singular, plural, k = _pick(rng, _KINDS)
        prop_s, prop_p, f = _pick(rng, [prop for prop in _PROPERTIES if prop[2] != k])
        form = int(rng.integers(4))
        english = (f"All {plural} {prop_p}", f"Some {plural} {prop_p}", f"No {singular} {prop_s}",
                   f"Some {plural} do not {prop_p}")[form]  # fmt: skip
        formulas = {
            0: (f"(∀x)({k}x ⊃ {f}x)", (f"(∀x)({k}x • {f}x)", f"(∀x)({f}x ⊃ {k}x)", f"(∃x)({k}x • {f}x)")),
            1: (f"(∃x)({k}x • {f}x)", (f"(∃x)({k}x ⊃ {f}x)", f"(∀x)({k}x ⊃ {f}x)", f"(∃x)({k}x • ~{f}x)")),
            2: (f"(∀x)({k}x ⊃ ~{f}x)", (f"~(∀x)({k}x ⊃ {f}x)", f"(∃x)({k}x • ~{f}x)", f"(∀x)(~{k}x ⊃ {f}x)")),
            3: (f"(∃x)({k}x • ~{f}x)", (f"(∀x)({k}x ⊃ ~{f}x)", f"(∃x)({k}x ⊃ ~{f}x)", f"(∃x)(~{k}x • {f}x)")),
        }
        gold, wrong = formulas[form]
        question = (
            f"Let {k}x mean 'x is a {singular}' and {f}x mean 'x {prop_s}'. Which formula of predicate logic best "
            f"translates '{english}'?"
        )
        return _Draft(question, gold, wrong, 0.6 + 0.3 * (form >= 2))
    count = _int(rng, 2, 6)
    letters = _sample(rng, ("P", "Q", "R", "S", "T", "U", "W"), count)
    formula = _random_formula(rng, letters)
    gold = 2**count
    question = (
        f"How many rows does a complete truth table need for the formula {formula}, "
        f"which contains {count} distinct sentence letters?"
    )
    wrong = _numeric_wrong(gold, [2 * count, count**2, 2 ** (count - 1)])
    return _Draft(question, str(gold), wrong, 0.15 * count)


# Acts told in the first person; a True flag marks the ones whose verdict is less obvious.
_MORALLY_WRONG = (
    ("I took cash from my roommate {n}'s wallet while they were asleep.", False),
    ("I kept the wallet {n} dropped on the bus, even though their address was inside.", False),
    ("I told the insurance company my bike had been stolen when I had actually sold it to {n}.", False),
    ("I slipped a laxative into my coworker {n}'s coffee as a prank.", False),
    ("I copied {n}'s essay and handed it in as my own work.", False),
    ("I left {n}'s dog, which I was minding, locked in a hot car while I shopped for two hours.", False),
    ("I spread a false rumour that {n} had been arrested for theft.", False),
    ("I drove home from {n}'s party after drinking most of a bottle of whisky.", False),
    ("I posted screenshots of {n}'s private messages online to embarrass them.", False),
    ("I smashed {n}'s car window because their music was too loud.", False),
    ("I sold my neighbour {n} a used car and hid the fact that its brakes were failing.", False),
    ("I parked in the disabled bay outside {n}'s shop although nobody in my car had a permit or needed it.", False),
    ("I talked my elderly aunt {n} into signing her savings over to me by lying about her debts.", False),
    ("I promised {n} I would feed their cat over the weekend, then never went to check on it.", True),
    ("I used the postage account of {n}'s company, where I work, to mail all my personal holiday cards.", True),
    ("I let my friend {n} take the blame for the vase I broke.", True),
    ("I ate the lunch {n} had labelled with their name in the office fridge.", True),
)
_NOT_MORALLY_WRONG = (
    ("I returned the extra change that {n}, the cashier, had handed me by mistake.", False),
    ("I helped {n} carry their groceries up four flights of stairs.", False),
    ("I donated my old winter coats to the shelter {n} runs.", False),
    ("I called an ambulance when I saw {n} collapse on the pavement.", False),
    ("I shared my umbrella with {n}, a stranger at the bus stop.", False),
    ("I got up early to clear the snow from my elderly neighbour {n}'s path.", False),
    ("I read a bedtime story to my little brother, {n}.", False),
    ("I handed the phone I found in the park to {n}, the officer on duty.", False),
    ("I stopped at the red light even though the road was empty.", False),
    ("I paid for {n}'s coffee because they had forgotten their wallet.", False),
    ("I told {n} their new haircut looked nice, though it was not my favourite style.", True),
    ("I skipped {n}'s birthday party to look after my sick mother.", True),
    ("I ate the last slice of pizza after {n} and everyone else said they were full.", True),
    ("I declined to lend {n} money because I needed it for my rent.", True),
    ("I fired {n}, an employee, after catching them stealing from the till.", True),
    ("I reported my coworker {n} to the manager for faking safety records.", True),
)
_VERDICTS = ("Wrong, Wrong", "Wrong, Not wrong", "Not wrong, Wrong", "Not wrong, Not wrong")
_MORAL_STEMS = (
    "By ordinary moral standards in the United States today, in which of these two scenarios does the narrator, "
    "who speaks as 'I', do something clearly morally wrong?",
    "Judged by everyday moral standards in the US today, does the person speaking as 'I' act in a clearly "
    "morally wrong way in each of the following scenarios?",
)


def _general_moral_scenarios(rng: Rng) -> _Draft:
    first_wrong, second_wrong = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    first_name, second_name = _two_names(rng)
    first_act, first_subtle = _pick(rng, _MORALLY_WRONG if first_wrong else _NOT_MORALLY_WRONG)
    second_act, second_subtle = _pick(rng, _MORALLY_WRONG if second_wrong else _NOT_MORALLY_WRONG)

    def verdict(a: bool, b: bool) -> str:
        return _VERDICTS[2 * (not a) + (not b)]

    flips = [verdict(not first_wrong, second_wrong), verdict(first_wrong, not second_wrong)]
    if second_subtle and not first_subtle:
        flips.reverse()
    wrong = (flips[0], flips[1], verdict(not first_wrong, not second_wrong))
    question = (
        f"{_pick(rng, _MORAL_STEMS)} Scenario 1: {first_act.format(n=first_name)} "
        f"Scenario 2: {second_act.format(n=second_name)}"
    )
    return _Draft(question, verdict(first_wrong, second_wrong), wrong, 0.45 * (first_subtle + second_subtle))


_ECONOMETRICS_FACTS = (
    _Fact(
        ("Which test is commonly used to detect first-order autocorrelation in regression residuals?",),
        "Durbin-Watson test",
        ("White test", "Ramsey RESET test", "Chow test"),
        0.0,
    ),
    _Fact(
        ("The White test and the Breusch-Pagan test are used to detect",),
        "heteroskedasticity",
        ("autocorrelation", "multicollinearity", "non-normal residuals"),
        -0.1,
    ),
    _Fact(
        ("The Chow test is used to test for",),
        "a structural break at a known date",
        ("a unit root", "omitted variables", "heteroskedasticity"),
        0.2,
    ),
    _Fact(
        ("Which test is used to check whether a time series has a unit root?",),
        "Augmented Dickey-Fuller test",
        ("Breusch-Pagan test", "Durbin-Watson test", "Jarque-Bera test"),
        0.1,
    ),
    _Fact(
        ("A valid instrumental variable must be",),
        "correlated with the endogenous regressor and uncorrelated with the error term",
        ("correlated with both the endogenous regressor and the error term",
         "uncorrelated with the endogenous regressor and with the error term",
         "correlated with the dependent variable but not with the regressors"),
        0.4,
    ),
    _Fact(
        ("If the errors of a linear regression are heteroskedastic but all other classical assumptions hold, the OLS "
         "coefficient estimates are",),
        "unbiased, but the usual standard errors are invalid",
        ("biased and inconsistent", "unbiased and efficient, with valid usual standard errors",
         "biased, but their standard errors are valid"),
        0.4,
    ),
    _Fact(
        ("Omitting a relevant variable that is correlated with an included regressor makes the OLS estimate of that "
         "regressor's coefficient",),
        "biased and inconsistent",
        ("unbiased but inefficient", "unbiased and consistent", "consistent but biased in small samples"),
        0.3,
    ),
    _Fact(
        ("Near multicollinearity among the regressors typically leads to",),
        "large standard errors for the affected coefficients",
        ("biased coefficient estimates", "heteroskedastic residuals", "an R-squared of zero"),
        0.1,
    ),
)  # fmt: skip
_ECONOMETRICS_CATEGORIES = (
    _Category(
        ("Which of the following is one of the assumptions of the classical linear regression model?",),
        ("Which of the following is NOT an assumption of the classical linear regression model?",
         "All of the following are assumptions of the classical linear regression model EXCEPT"),
        ("the errors have zero mean", "the errors have constant variance",
         "the errors are uncorrelated across observations", "the regressors are not perfectly collinear"),
        ("the regressors are normally distributed", "the dependent variable is bounded between 0 and 1",
         "the sample size exceeds 1,000", "the coefficients are all positive"),
        0.2,
    ),
)  # fmt: skip
_ECONOMETRICS_COURSES = ("econometrics", "applied econometrics", "regression analysis")
_VARIABLES = (
    ("wages", "years of schooling"),
    ("house prices", "floor area"),
    ("sales", "advertising spending"),
    ("crop yield", "fertiliser use"),
    ("exports", "partner-country GDP"),
    ("electricity demand", "temperature"),
    ("test scores", "class size"),
)


def _decimal(value: float, places: int) -> str:
    return f"{value:.{places}f}"


def _general_econometrics(rng: Rng) -> _Draft:
    if rng.random() < 1 / 3:
        return _ask_bank(rng, _ECONOMETRICS_COURSES, _ECONOMETRICS_FACTS, _ECONOMETRICS_CATEGORIES, 0.3)
    return _with_lead_in(_econometrics_computation, _ECONOMETRICS_COURSES)(rng)


def _econometrics_computation(rng: Rng) -> _Draft:
    kind = int(rng.integers(4))
    y, x = _pick(rng, _VARIABLES)
    n = _int(rng, 4, 60) * 10
    if kind == 0:
        t = _pick(rng, (1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 1.2, 0.8))
        se = _pick(rng, (0.05, 0.1, 0.2, 0.25, 0.4, 0.5, 0.02))
        coef = t * se
        question = (
            f"A regression of {y} on {x} with {n} observations gives a slope estimate of {coef:g} with a standard "
            f"error of {se:g}. What is the t-ratio for testing that the true slope is zero?"
        )
        gold = _decimal(t, 2)
        wrong = _three_wrong(gold, [_decimal(coef * se, 4), _decimal(se / coef, 2), _decimal(coef - se, 2)],
                             lambda k: _decimal(t + 0.5 * k, 2))  # fmt: skip
        return _Draft(question, gold, wrong, 0.1)
    if kind == 1:
        tss = _pick(rng, (200, 400, 500, 800, 1000, 1250))
        share = Fraction(_int(rng, 2, 18), 20)
        rss = tss * share
        r2 = 1 - share
        if rng.random() < 0.5:
            question = (
                f"In a regression of {y} on {x}, the total sum of squares is {tss} and the residual sum of squares is "
                f"{_exact(rss)}. What is the R-squared?"
            )
            gold = _decimal(float(r2), 2)
            candidates = [_decimal(float(share), 2), _decimal(float((tss - rss) / rss), 2), _decimal(float(r2) / 2, 2)]
            return _Draft(
                question, gold, _three_wrong(gold, candidates, lambda k: _decimal(float(r2) + 0.03 * k, 2)), 0.2
            )
        k = _int(rng, 2, 6)
        adjusted = 1 - (1 - float(r2)) * (n - 1) / (n - k - 1)
        question = (
            f"A regression of {y} on {k} regressors including {x}, estimated with an intercept on {n} observations, "
            f"has an R-squared of {_decimal(float(r2), 2)}. What is the adjusted R-squared?"
        )
        gold = _decimal(adjusted, 3)
        candidates = [
            _decimal(float(r2), 3),
            _decimal(1 - (1 - float(r2)) * n / (n - k), 3),
            _decimal(1 - (1 - float(r2)) * (n - 1) / (n - k), 3),
        ]
        return _Draft(question, gold, _three_wrong(gold, candidates, lambda j: _decimal(adjusted - 0.004 * j, 3)), 0.7)
    if kind == 2:
        c = _int(rng, 1, 9)
        phi = Fraction(_pick(rng, (1, 2, 3, 4, 5, 6, 8)), 10) if rng.random() < 0.7 else Fraction(_pick(rng, (1, 3)), 4)
        gold = Fraction(c) / (1 - phi)
        question = (
            f"Consider the stationary AR(1) model of {y}, y_t = {c} + {_exact(phi)} y_(t-1) + u_t, where u_t is "
            "white noise with zero mean. What is the unconditional mean of y_t?"
        )
        wrong = _numeric_wrong(gold, [Fraction(c), c / phi, c * (1 - phi), c / (1 + phi)])
        return _Draft(question, _exact(gold), wrong, 0.6)
    beta = Fraction(_pick(rng, (2, 3, 4, 5, 8, 12, 15)), 10)
    change = _pick(rng, (2, 5, 10, 20))
    gold_value = beta * change
    question = (
        f"In the estimated model ln({y}) = a + {_exact(beta)} ln({x}), a {change}% increase in {x} is associated "
        f"with approximately what change in {y}?"
    )

    def describe(v: Fraction) -> str:
        return f"an increase of about {_exact(v)}%"

    gold = describe(gold_value)
    candidates = [describe(beta), describe(Fraction(change) / beta), f"an increase of about {_exact(gold_value)} units"]
    return _Draft(question, gold, _three_wrong(gold, candidates, lambda j: describe(gold_value + j)), 0.3)


_TRUE_STATEMENTS = (
    "Every group of prime order is cyclic.",
    "Every subgroup of a cyclic group is cyclic.",
    "The order of a subgroup of a finite group divides the order of the group.",
    "Every field is an integral domain.",
    "Every finite integral domain is a field.",
    "The kernel of a group homomorphism is a normal subgroup.",
    "The symmetric group S_3 is non-abelian.",
    "Every cyclic group is abelian.",
    "The intersection of two subgroups of a group is a subgroup.",
    "Z_p is a field whenever p is prime.",
)
_FALSE_STATEMENTS = (
    "Every abelian group is cyclic.",
    "Every integral domain is a field.",
    "Every subgroup of S_4 is normal.",
    "Z_6 is a field.",
    "The union of two subgroups of a group is always a subgroup.",
    "Every group of order n contains an element of order n.",
    "Every group of order 4 is cyclic.",
    "The polynomial x^2 + 1 is irreducible over the complex numbers.",
    "Every ring homomorphism is injective.",
    "Every non-abelian group has more than 8 elements.",
)
_TRUTH_PAIRS = ("True, True", "True, False", "False, True", "False, False")
_EXTENSIONS = (
    ("Q(√{a})", 2, (4, 1, 3)),
    ("Q(√{a}, √{b})", 4, (2, 3, 8)),
    ("Q(∛{a})", 3, (2, 6, 9)),
    ("Q(√{a}, ∛{b})", 6, (5, 3, 9)),
    ("Q(√{a} + √{b})", 4, (2, 8, 1)),
)


_ALGEBRA_COURSES = ("abstract algebra", "group theory", "algebra")


def _cycles_text(rng: Rng, lengths: Sequence[int]) -> str:
    points = [int(v) + 1 for v in rng.permutation(sum(lengths))]
    cycles, at = [], 0
    for length in lengths:
        cycles.append("(" + " ".join(str(v) for v in points[at : at + length]) + ")")
        at += length
    return "".join(cycles)


def _general_abstract_algebra(rng: Rng) -> _Draft:
    kind = int(rng.integers(6))
    if kind == 0:
        n = _int(rng, 6, 60) if rng.random() < 0.7 else _int(rng, 61, 400)
        k = _int(rng, 2, n - 1)
        gold = n // math.gcd(k, n)
        question = f"What is the order of the element {k} in the additive group Z_{n}?"
        wrong = _numeric_wrong(gold, [math.gcd(k, n), n, k, n - k])
        return _Draft(question, str(gold), wrong, _magnitude(n, free=2, weight=0.3))
    if kind == 1:
        n = _int(rng, 8, 90) if rng.random() < 0.7 else _int(rng, 91, 600)
        gold = sum(1 for j in range(1, n + 1) if math.gcd(j, n) == 1)
        question = f"How many generators does the cyclic group Z_{n} have?"
        wrong = _numeric_wrong(gold, [n - 1, n // 2, gold - 1])
        return _Draft(question, str(gold), wrong, 0.2 + _magnitude(n, free=2, weight=0.3))
    if kind == 2:
        lengths = sorted((_int(rng, 2, 5) for _ in range(_int(rng, 2, 3))), reverse=True)
        gold = math.lcm(*lengths)
        group = f"S_{max(sum(lengths), 5)}"
        question = f"What is the order of the permutation {_cycles_text(rng, lengths)} in the symmetric group {group}?"
        wrong = _numeric_wrong(gold, [sum(lengths), math.prod(lengths), max(lengths)])
        return _Draft(question, str(gold), wrong, 0.2 * len(lengths))
    if kind == 3:
        template, gold, others = _pick(rng, _EXTENSIONS)
        a, b = _sample(rng, (2, 3, 5, 7, 11, 13), 2)
        field = template.format(a=a, b=b)
        question = f"What is the degree of the field extension {field} over Q?"
        return _Draft(question, str(gold), tuple(str(o) for o in others), 0.2 * (gold > 3))
    if kind == 4:
        first_true, second_true = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        first = _pick(rng, _TRUE_STATEMENTS if first_true else _FALSE_STATEMENTS)
        second = _pick(rng, _TRUE_STATEMENTS if second_true else _FALSE_STATEMENTS)
        while second == first:
            second = _pick(rng, _TRUE_STATEMENTS if second_true else _FALSE_STATEMENTS)

        def pair(a: bool, b: bool) -> str:
            return _TRUTH_PAIRS[2 * (not a) + (not b)]

        wrong = (
            pair(not first_true, second_true),
            pair(first_true, not second_true),
            pair(not first_true, not second_true),
        )
        question = f"Statement 1 | {first} Statement 2 | {second} Which assessment of the two statements is correct?"
        return _Draft(question, pair(first_true, second_true), wrong, 0.3)
    a, b = _int(rng, 2, 30), _int(rng, 2, 30)
    gold = math.lcm(a, b)
    question = f"What is the characteristic of the ring Z_{a} × Z_{b}?"
    wrong = _numeric_wrong(gold, [a * b, math.gcd(a, b), max(a, b), a + b])
    return _Draft(question, str(gold), wrong, 0.3 * (math.gcd(a, b) > 1))


_LAW_ITEMS = ("bicycle", "sofa", "camera", "rowing machine", "violin", "telescope", "drum kit", "sewing machine")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_TORT_VERDICTS = ("Assault only", "Battery only", "Both assault and battery", "Neither assault nor battery")
_BURGLARY_VERDICTS = (
    "burglary",
    "larceny, but not burglary",
    "attempted larceny, but not burglary",
    "robbery",
)


def _general_professional_law(rng: Rng) -> _Draft:
    a, b = _two_names(rng)
    kind = int(rng.integers(5))
    if kind == 0:
        item, price = _pick(rng, _LAW_ITEMS), 10 * _int(rng, 8, 45)
        day = _int(rng, 0, 2)
        first, second, third = _DAYS[day], _DAYS[day + 1], _DAYS[day + 2]
        offer = f"{a} wrote to {b} offering to sell {a}'s used {item} for ${price}."
        if rng.random() < 0.6:
            question = (
                f"{offer} On {first}, {b} mailed a letter accepting the offer. On {second}, before the acceptance "
                f"arrived, {a} telephoned {b} to revoke the offer. The acceptance reached {a} on {third}. "
                f"Is there a contract between {a} and {b}?"
            )
            gold = "Yes, because the acceptance took effect when it was mailed."
            wrong = (
                "No, because the revocation was communicated before the acceptance was received.",
                f"No, because {a} could revoke the offer at any time before learning of the acceptance.",
                "Yes, because an offer made in writing cannot be revoked.",
            )
            return _Draft(question, gold, wrong, 0.4)
        question = (
            f"{offer} On {first}, {a} telephoned {b} to revoke the offer. On {second}, {b} mailed a letter accepting "
            f"it anyway. Is there a contract between {a} and {b}?"
        )
        gold = "No, because the offer was revoked before it was accepted."
        wrong = (
            "Yes, because the acceptance took effect when it was mailed.",
            "Yes, because a written offer cannot be revoked by telephone.",
            "No, because an acceptance is effective only when the offeror receives it.",
        )
        return _Draft(question, gold, wrong, 0.0)
    if kind == 1:
        price, extra = 1000 * _int(rng, 8, 40), 500 * _int(rng, 2, 12)
        if rng.random() < 0.6:
            question = (
                f"{a}, a builder, agreed in writing to build a garage for {b} for ${price:,}. Halfway through, "
                f"{a} said the job was costing more than expected and refused to continue unless {b} promised an extra "
                f"${extra:,}. {b} promised, {a} finished the work, and {b} then paid only ${price:,}. If {a} sues for "
                f"the extra ${extra:,}, {a} will most likely"
            )
            gold = f"lose, because {a} gave no new consideration for the promise of extra pay."
            wrong = (
                f"win, because {b} freely agreed to the modification.",
                "win, because a modification of a contract needs no consideration.",
                "lose, because the modification was not in writing.",
            )
            return _Draft(question, gold, wrong, 0.2)
        question = (
            f"{a}, a furniture maker, agreed in writing to sell {b} 400 office chairs for ${price:,}. Before delivery "
            f"the cost of steel rose, and {a} asked in good faith for an extra ${extra:,}. {b} agreed in a signed "
            f"email, took delivery, and then paid only ${price:,}. If {a} sues for the extra ${extra:,}, {a} will most "
            "likely"
        )
        gold = "win, because a good-faith modification of a contract for the sale of goods needs no consideration."
        wrong = (
            f"lose, because {a} gave no new consideration for the promise of extra pay.",
            f"lose, because {a} was already bound to deliver the chairs at the agreed price.",
            "win, because the rise in the cost of steel made the original contract void.",
        )
        return _Draft(question, gold, wrong, 0.7)
    if kind == 2:
        store = _pick(rng, ("jewellery shop", "petrol station", "pharmacy", "bakery", "bookshop", "bank branch"))
        witness = _pick(rng, [n for n in NAMES if n not in (a, b)])
        variant = int(rng.integers(3))
        if variant == 0:
            question = (
                f"At {a}'s trial for robbing a {store}, the prosecution calls {witness}, who testifies that the day "
                f"after the robbery {b} told {witness}: 'I saw {a} run out of the {store} with a bag of cash.' {b} is "
                f"available but is not called. {a} objects. The testimony is"
            )
            gold = "inadmissible hearsay."
            wrong = (
                "admissible as a present sense impression.",
                f"admissible because {b} is available to testify.",
                "admissible as a statement of an opposing party.",
            )
            return _Draft(question, gold, wrong, 0.2)
        if variant == 1:
            question = (
                f"At {a}'s trial for robbing a {store}, the prosecution calls {witness}, who testifies that the next "
                f"morning {a} said to {witness}: 'I robbed the {store} last night.' {a} objects. The testimony is"
            )
            gold = "admissible as a statement of an opposing party."
            wrong = (
                "inadmissible hearsay.",
                f"admissible only if {a} chooses to testify.",
                f"inadmissible because {a} has a privilege against self-incrimination.",
            )
            return _Draft(question, gold, wrong, 0.3)
        question = (
            f"In a civil suit after a collision outside a {store}, {witness} testifies that seconds after a van struck "
            f"a cyclist, {b}, still shaking and screaming, shouted: 'The van ran the red light!' The testimony is "
            "offered to prove that the van ran the red light. It is"
        )
        gold = "admissible as an excited utterance."
        wrong = (
            "inadmissible hearsay.",
            f"admissible only if {b} is unavailable to testify.",
            "admissible as a dying declaration.",
        )
        return _Draft(question, gold, wrong, 0.4)
    if kind == 3:
        weapon = _pick(rng, ("a baseball bat", "a walking stick", "a rolled-up umbrella", "a broom handle"))
        variant = int(rng.integers(4))
        scenes = (
            f"{a}, intending only to frighten {b}, swung {weapon} at {b} and deliberately missed by a few inches. {b} "
            "saw the swing coming and was terrified, but was not touched.",
            f"As a joke, {a} crept up behind {b} and struck {b} on the back with {weapon}. {b} never saw it coming but "
            "was bruised and offended.",
            f"{a} swung {weapon} at {b}, who saw it coming and tried to duck, and struck {b} on the arm.",
            f"{a} swung {weapon} at {b}, who was asleep on a park bench, deliberately missing by a few inches. {b} "
            "never woke up and learned of it only weeks later.",
        )
        gold_index = (0, 1, 2, 3)[variant]
        order = ((2, 3, 1), (2, 3, 0), (0, 1, 3), (0, 1, 2))[variant]
        question = f"{scenes[variant]} Which intentional tort, if any, has {a} committed against {b}?"
        wrong = tuple(_TORT_VERDICTS[j] for j in order)
        return _Draft(question, _TORT_VERDICTS[gold_index], wrong, 0.2 + 0.4 * (variant == 3))
    thing = _pick(rng, ("television", "laptop", "watch", "jewellery box", "painting"))
    variant = int(rng.integers(4))
    scenes = (
        f"Late one night, {a} opened the unlocked front door of {b}'s house and went in, intending to steal {b}'s "
        f"{thing}. {a} was arrested in the hallway before taking anything.",
        f"Late one night, {b} invited {a} into {b}'s house for a drink. Once inside, {a} decided to steal {b}'s "
        f"{thing} and left with it while {b} was out of the room.",
        f"At noon, {a} broke a window of {b}'s house, climbed in and took {b}'s {thing}.",
        f"At noon, {a} broke a window of {b}'s house and climbed in to steal {b}'s {thing}, but was arrested before "
        "taking anything.",
    )
    gold_index = (0, 1, 1, 2)[variant]
    order = ((2, 1, 3), (0, 3, 2), (0, 3, 2), (0, 1, 3))[variant]
    question = f"{scenes[variant]} Applying the common-law definitions, {a} is guilty of"
    wrong = tuple(_BURGLARY_VERDICTS[j] for j in order)
    return _Draft(question, _BURGLARY_VERDICTS[gold_index], wrong, 0.3 + 0.4 * (variant >= 2))


# =====================================================================================================================
# math: MATH-like problems with a short exact answer.


_MATH_FRAMES = (
    "{name} is stuck on this {subject} exercise.",
    "This problem is from {name}'s {subject} homework.",
    "{name} meets the following on {a_course} worksheet.",
    "{A_course} contest paper taken by {name} includes this problem.",
    "{name}'s {subject} teacher writes this on the board.",
    "{name} is practising {subject} with this problem.",
)


def _framed(build: Callable[[Rng], _Draft], subjects: Sequence[str]) -> Callable[[Rng], _Draft]:
    """Give a bare exercise a framing sentence (who meets it, in which subject) unless it already names someone."""

    def framed(rng: Rng) -> _Draft:
        subject = _pick(rng, subjects)
        frame = _pick(rng, _MATH_FRAMES).format(name=_pick(rng, NAMES), subject=subject, **_articles(subject))
        draft = build(rng)
        if any(name in draft.question for name in NAMES):
            return draft
        return _Draft(f"{frame} {draft.question}", draft.answer, draft.wrong, draft.complexity)

    return framed


def _math_arithmetic(rng: Rng) -> _Draft:
    """One to three operations on a running count; slips are the partial result, a sign slip, off by one."""
    name, friend = _two_names(rng)
    thing = _pick(rng, THINGS)
    scale = _pick(rng, (10, 25, 100)) if rng.random() < 0.35 else 1
    value = _int(rng, 12, 90) * scale
    sentences = [f"{name} has {value} {thing}."]
    history = [value]
    slip = value + 1
    steps = _int(rng, 1, 3)
    for _ in range(steps):
        op = int(rng.integers(4))
        divisors = [k for k in range(2, 7) if value % k == 0]
        if op == 1 and value > 6:
            x = _int(rng, 2, value - 2)
            sentences.append(
                _pick(rng, (f"{name} gives {x} of them to {friend}.", f"{name} loses {x} of them on the way home."))
            )
            slip, value = value + x, value - x
        elif op == 2:
            packs, per = _int(rng, 2, 9), _int(rng, 3, 12)
            sentences.append(f"{name} then buys {packs} packs with {per} {thing} in each.")
            slip, value = value + packs + per, value + packs * per
        elif op == 3 and divisors:
            k = _pick(rng, divisors)
            sentences.append(f"{name} splits them equally into {k} bags and keeps only one bag.")
            slip, value = value - value // k, value // k
        else:
            x = _int(rng, 3, 40) * scale
            sentences.append(_pick(rng, (f"Then {name} finds {x} more.", f"{friend} gives {name} another {x}.")))
            slip, value = value - x, value + x
        history.append(value)
    sentences.append(f"How many {thing} does {name} have now?")
    wrong = _numeric_wrong(value, [history[-2], slip, value + 1, value - 1])
    return _Draft(" ".join(sentences), str(value), wrong, 0.45 * (steps - 1) + _magnitude(*history, weight=0.3))


_GOODS = ("jacket", "bicycle", "lamp", "pair of boots", "tent", "desk chair", "guitar", "rug")
_PLACES = ("village", "town", "island", "valley", "suburb")


def _math_percentages(rng: Rng) -> _Draft:
    name = _pick(rng, NAMES)
    kind = int(rng.integers(4))
    if kind == 0:
        p = _pick(rng, (5, 10, 12, 15, 20, 25, 30, 35, 40, 45, 60, 75, 80, 85))
        unit = 100 // math.gcd(p, 100)
        n = unit * _int(rng, max(1, 20 // unit), 2000 // unit)
        gold = Fraction(n * p, 100)
        question = _pick(
            rng,
            (
                f"Of the {n} students at {name}'s school, {p}% walk to school. How many students walk to school?",
                f"A theatre has {n} seats, and {p}% of them are sold for {name}'s concert. How many seats are sold?",
                f"{name} reads {p}% of a {n}-page novel on a train journey. How many pages does {name} read?",
            ),
        )
        return _Draft(
            question,
            _exact(gold),
            _numeric_wrong(gold, [n - gold, Fraction(n * p, 10), gold + p]),
            _magnitude(n, free=3),
        )
    good = _pick(rng, _GOODS)
    if kind == 1:
        price = 20 * _int(rng, 2, 60)
        a, b = _pick(rng, (10, 20, 25, 30, 40, 50)), _pick(rng, (10, 20, 25, 30, 40, 50))
        gold = Fraction(price * (100 - a) * (100 - b), 10000)
        question = (
            f"A {good} is priced at ${price}. It is discounted by {a}%, and the sale price is then cut by a further "
            f"{b}%. What is the final price in dollars?"
        )
        candidates = [
            Fraction(price * (100 - a - b), 100),
            Fraction(price * (100 - a), 100),
            Fraction(price * (100 - a) * (100 + b), 10000),
        ]
        return _Draft(question, _exact(gold), _numeric_wrong(gold, candidates), 0.5 + _magnitude(price, free=3))
    if kind == 2:
        before = 20 * _int(rng, 1, 300)
        p = _pick(rng, (5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 120, 150))
        after = before * (100 + p) // 100
        question = (
            f"The population of a {_pick(rng, _PLACES)} grew from {before} to {after} in ten years. "
            "By what percentage did it grow?"
        )
        candidates = [Fraction(100 * (after - before), after), after - before, p + 10]
        return _Draft(question, str(p), _numeric_wrong(p, candidates), 0.3 + _magnitude(after, free=3))
    before = 20 * _int(rng, 2, 60)
    p = _pick(rng, (10, 20, 25, 50, 30, 40))
    after = before * (100 + p) // 100
    question = (
        f"After a {p}% price rise, {name}'s favourite {good} costs ${after}. "
        "What did it cost before the rise, in dollars?"
    )
    candidates = [Fraction(after * (100 - p), 100), after - p, before + 10]
    return _Draft(question, str(before), _numeric_wrong(before, candidates), 0.7 + _magnitude(after, free=3))


_INGREDIENTS = ("flour", "sugar", "butter", "rice", "lentils", "oats", "cheese")


def _math_ratios(rng: Rng) -> _Draft:
    first, second = _two_names(rng)
    kind = int(rng.integers(5))
    if kind == 0:
        a, b = _sample(rng, (1, 2, 3, 4, 5, 6, 7, 8, 9), 2)
        k = _int(rng, 2, 60) * _pick(rng, (1, 1, 10))
        total = (a + b) * k
        question = f"{first} and {second} share ${total} in the ratio {a}:{b}. How many dollars does {second} receive?"
        gold = b * k
        return _Draft(
            question,
            str(gold),
            _numeric_wrong(gold, [a * k, Fraction(total, b), Fraction(total, 2)]),
            _magnitude(total, free=3),
        )
    if kind == 1:
        third = _pick(rng, [n for n in NAMES if n not in (first, second)])
        parts = _sample(rng, (1, 2, 3, 4, 5, 6, 7), 3)
        k = _int(rng, 2, 40) * _pick(rng, (1, 10))
        total = sum(parts) * k
        asked = int(rng.integers(3))
        who = (first, second, third)[asked]
        question = (
            f"{first}, {second} and {third} split {total} stamps in the ratio {parts[0]}:{parts[1]}:{parts[2]}. "
            f"How many stamps does {who} get?"
        )
        gold = parts[asked] * k
        candidates = [parts[(asked + 1) % 3] * k, Fraction(total, 3), Fraction(total * parts[asked], sum(parts) - 1)]
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.4 + _magnitude(total, free=3))
    if kind == 2:
        serves = _pick(rng, (2, 3, 4, 6, 8))
        target = _pick(rng, [t for t in (3, 5, 6, 9, 10, 12, 15, 18, 20, 24) if t != serves])
        grams = serves * _int(rng, 10, 90)
        ingredient = _pick(rng, _INGREDIENTS)
        gold = Fraction(grams * target, serves)
        question = (
            f"{first}'s recipe for {serves} people uses {grams} g of {ingredient}. How many grams of {ingredient} are "
            f"needed to cook the same recipe for {target} people?"
        )
        candidates = [Fraction(grams * serves, target), grams + target - serves, grams * target]
        return _Draft(question, _exact(gold), _numeric_wrong(gold, candidates), 0.2 + _magnitude(gold, free=3))
    if kind == 3:
        bottles, minutes = _int(rng, 2, 40) * 5, _pick(rng, (2, 3, 4, 5, 6, 8, 10, 12))
        times = _int(rng, 2, 15)
        question = (
            f"A machine in {first}'s workshop fills {bottles} bottles in {minutes} minutes. At the same rate, how many "
            f"minutes does it take to fill {bottles * times} bottles?"
        )
        gold = minutes * times
        return _Draft(
            question,
            str(gold),
            _numeric_wrong(gold, [minutes + times, gold + minutes, bottles * times // minutes]),
            0.1,
        )
    minutes = _pick(rng, (10, 12, 15, 20, 30, 40, 45, 90))
    distance = minutes // math.gcd(minutes, 60) * _int(rng, 1, 40)
    speed = Fraction(distance * 60, minutes)
    question = f"{first} drives {distance} km in {minutes} minutes. What is the average speed in kilometres per hour?"
    candidates = [Fraction(distance, minutes), Fraction(distance * minutes, 60), speed / 2]
    return _Draft(question, _exact(speed), _numeric_wrong(speed, candidates), 0.4)


def _math_linear_equations(rng: Rng) -> _Draft:
    kind = int(rng.integers(5))
    x = _int(rng, -15, 25) or 7
    if kind == 0:
        a, b = _int(rng, 2, 12), _int(rng, -40, 40) or 5
        c = a * x + b
        question = f"Solve for x: {_linear([(a, 'x'), (b, '')])} = {c}."
        wrong = _numeric_wrong(x, [Fraction(c + b, a), c - b, -x], positive=False)
        return _Draft(question, str(x), wrong, _magnitude(a, b, c))
    if kind == 1:
        a, d = _sample(rng, range(2, 13), 2)
        b = _int(rng, -30, 30)
        e = a * x + b - d * x
        question = f"Find x if {_linear([(a, 'x'), (b, '')])} = {_linear([(d, 'x'), (e, '')])}."
        wrong = _numeric_wrong(x, [Fraction(e - b, a + d), -x, Fraction(e + b, a - d)], positive=False)
        return _Draft(question, str(x), wrong, 0.3 + _magnitude(a, b, d, e))
    if kind == 2:
        p, r = _int(rng, 2, 9), _int(rng, 2, 9)
        s = _int(rng, -10, 20)
        q = r * s - p * x
        question = f"Solve ({_linear([(p, 'x'), (q, '')])})/{r} = {s} for x."
        wrong = _numeric_wrong(x, [Fraction(s - q, p), Fraction(s * r + q, p), x + r], positive=False)
        return _Draft(question, str(x), wrong, 0.5 + _magnitude(q, s * r))
    if kind == 3:
        n = abs(x) + _int(rng, 2, 30)
        a, b = _int(rng, 2, 9), _int(rng, 1, 50)
        c = a * n - b
        name = _pick(rng, NAMES)
        question = (
            f"{name} thinks of a number, multiplies it by {a} and then subtracts {b}, getting {c}. "
            f"What number did {name} think of?"
        )
        wrong = _numeric_wrong(n, [Fraction(c - b, a), c + b, Fraction(c, a) + b])
        return _Draft(question, str(n), wrong, 0.2 + _magnitude(c))
    older, younger = _two_names(rng)
    m = _pick(rng, (2, 3))
    k = _int(rng, m + 1, m + 3)
    age = _int(rng, 3, 15)
    if (age * (k - m)) % (m - 1):
        age += 1
    years = age * (k - m) // (m - 1)
    question = (
        f"{older} is {k} times as old as {younger}. In {years} years, {older} will be {m} times as old as {younger}. "
        f"How old is {younger} now?"
    )
    return _Draft(question, str(age), _numeric_wrong(age, [age + years, k * age, age * m]), 0.8)


def _math_sequences(rng: Rng) -> _Draft:
    kind = int(rng.integers(5))
    if kind <= 1:
        a, d = _int(rng, -20, 50), _int(rng, -9, 15) or 4
        n = _int(rng, 8, 60)
        shown = ", ".join(str(a + j * d) for j in range(4))
        if kind == 0:
            gold = a + (n - 1) * d
            question = f"What is the {_ordinal(n)} term of the arithmetic sequence {shown}, ...?"
            wrong = _numeric_wrong(gold, [a + n * d, a + (n - 2) * d, (n - 1) * d], positive=False)
            return _Draft(question, str(gold), wrong, _magnitude(gold, n))
        gold = n * (2 * a + (n - 1) * d) // 2
        question = f"What is the sum of the first {n} terms of the arithmetic sequence {shown}, ...?"
        candidates = [gold - (a + (n - 1) * d), n * (2 * a + n * d) // 2, a + (n - 1) * d]
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates, positive=False), 0.4 + _magnitude(gold, n))
    if kind <= 3:
        a, r = _int(rng, 1, 9), _pick(rng, (2, 3, -2, 4, 5, -3))
        n = _int(rng, 5, 10)
        shown = ", ".join(str(a * r**j) for j in range(4))
        if kind == 2:
            gold = a * r ** (n - 1)
            question = _pick(
                rng,
                (
                    f"Find the {_ordinal(n)} term of the geometric sequence {shown}, ....",
                    f"What is the {_ordinal(n)} term of the geometric progression that begins {shown}?",
                ),
            )
            wrong = _numeric_wrong(gold, [a * r**n, a * r ** (n - 2), a * r * (n - 1)], positive=False)
            return _Draft(question, str(gold), wrong, 0.3 + _magnitude(gold, weight=0.15))
        gold = a * (r**n - 1) // (r - 1)
        question = f"What is the sum of the first {n} terms of the geometric sequence {shown}, ...?"
        candidates = [a * (r ** (n - 1) - 1) // (r - 1), a * r ** (n - 1), a * (r ** (n + 1) - 1) // (r - 1)]
        return _Draft(
            question, str(gold), _numeric_wrong(gold, candidates, positive=False), 0.6 + _magnitude(gold, weight=0.15)
        )
    start, p, q = _int(rng, -5, 9), _pick(rng, (2, 3, -2)), _int(rng, -5, 5) or 1
    n = _int(rng, 4, 7)
    terms = [start]
    for _ in range(n):
        terms.append(p * terms[-1] + q)
    question = (
        f"A sequence is defined by a_1 = {start} and a_(k+1) = {_linear([(p, 'a_k'), (q, '')])} for k >= 1. "
        f"What is a_{n}?"
    )
    gold = terms[n - 1]
    wrong = _numeric_wrong(gold, [terms[n - 2], terms[n], gold + q], positive=False)
    return _Draft(question, str(gold), wrong, 0.4 + _magnitude(gold, weight=0.15))


def _solve_2x2(rng: Rng) -> tuple[list[list[int]], int, int]:
    while True:
        m = [[_int(rng, 1, 9) * _pick(rng, (1, -1)) for _ in range(2)] for _ in range(2)]
        if m[0][0] * m[1][1] - m[0][1] * m[1][0] != 0:
            return m, _int(rng, -9, 9), _int(rng, -9, 9)


def _det3(m: Sequence[Sequence[int]]) -> int:
    return (
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    )


def _math_systems(rng: Rng) -> _Draft:
    kind = int(rng.integers(4))
    if kind == 0:
        m, x, y = _solve_2x2(rng)
        eqs = [f"{_linear([(m[i][0], 'x'), (m[i][1], 'y')])} = {m[i][0] * x + m[i][1] * y}" for i in range(2)]
        values = {"x": x, "y": y, "x + y": x + y, "x - y": x - y, "xy": x * y}
        asked = _pick(rng, tuple(values))
        gold = values[asked]
        candidates = [v for key, v in values.items() if key != asked] + [-gold]
        question = f"If {eqs[0]} and {eqs[1]}, what is the value of {asked}?"
        return _Draft(
            question, str(gold), _numeric_wrong(gold, candidates, positive=False), 0.2 * (asked not in ("x", "y"))
        )
    if kind == 1:
        adult, child = _int(rng, 8, 20), _int(rng, 3, 6)
        adults, children = _int(rng, 10, 200), _int(rng, 10, 200)
        name = _pick(rng, NAMES)
        question = (
            f"{name}'s school play sold {adults + children} tickets for a total of "
            f"${adults * adult + children * child}. "
            f"Adult tickets cost ${adult} and child tickets cost ${child}. How many adult tickets were sold?"
        )
        candidates = [children, (adults + children) // 2, (adults * adult + children * child) // adult]
        return _Draft(
            question, str(adults), _numeric_wrong(adults, candidates), 0.3 + _magnitude(adults + children, free=3)
        )
    if kind == 2:
        nickels, dimes = _int(rng, 3, 60), _int(rng, 3, 60)
        cents = 5 * nickels + 10 * dimes
        name = _pick(rng, NAMES)
        question = (
            f"{name} has {nickels + dimes} coins, all nickels (5 cents) and dimes (10 cents), worth "
            f"${cents // 100}.{cents % 100:02d} in total. How many dimes does {name} have?"
        )
        return _Draft(question, str(dimes), _numeric_wrong(dimes, [nickels, (nickels + dimes) // 2, dimes + 5]), 0.3)
    while True:
        m = [[_int(rng, -3, 3) for _ in range(3)] for _ in range(3)]
        if _det3(m) != 0 and all(any(row) for row in m):
            break
    sol = [_int(rng, -6, 6) for _ in range(3)]
    rhs = [sum(c * v for c, v in zip(row, sol, strict=True)) for row in m]
    eqs = [
        f"{_linear([(row[0], 'x'), (row[1], 'y'), (row[2], 'z')])} = {value}" for row, value in zip(m, rhs, strict=True)
    ]
    asked = int(rng.integers(3))
    gold = sol[asked]
    question = f"Solve the system {eqs[0]}, {eqs[1]}, {eqs[2]}. What is {'xyz'[asked]}?"
    candidates = [sol[(asked + 1) % 3], sol[(asked + 2) % 3], -gold]
    return _Draft(question, str(gold), _numeric_wrong(gold, candidates, positive=False), 0.8)


def _math_quadratics(rng: Rng) -> _Draft:
    kind = int(rng.integers(6))
    if kind <= 1:
        r1, r2 = sorted(_sample(rng, [v for v in range(-12, 13) if v], 2))
        a = 1 if kind == 0 else _int(rng, 2, 5)
        poly = _linear([(a, "x^2"), (-a * (r1 + r2), "x"), (a * r1 * r2, "")])
        if kind == 1:
            gold = r1**2 + r2**2
            question = f"Let r and s be the roots of {poly} = 0. What is r^2 + s^2?"
            candidates = [(r1 + r2) ** 2, (r1 + r2) ** 2 - r1 * r2, abs(r1**2 - r2**2)]
            return _Draft(
                question, str(gold), _numeric_wrong(gold, candidates, positive=False), 0.6 + _magnitude(a * r1 * r2)
            )
        asked = int(rng.integers(3))
        if asked == 0:
            gold, candidates, text = r2, [r1, -r2, -r1], "the larger root"
        elif asked == 1:
            gold, candidates, text = r1 + r2, [-(r1 + r2), r1 * r2, r2 - r1], "the sum of the roots"
        else:
            gold, candidates, text = r1 * r2, [-(r1 * r2), r1 + r2, r1 * r2 + 1], "the product of the roots"
        question = _pick(rng, (f"What is {text} of the equation {poly} = 0?", f"Find {text} of {poly} = 0."))
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates, positive=False), _magnitude(r1 * r2))
    if kind == 2:
        b, c = 2 * _int(rng, -9, 9) or 4, _int(rng, -30, 30)
        gold = c - b * b // 4
        question = f"What is the minimum value of y = {_linear([(1, 'x^2'), (b, 'x'), (c, '')])} over all real x?"
        return _Draft(question, str(gold), _numeric_wrong(gold, [c, c + b * b // 4, -b // 2], positive=False), 0.3)
    if kind == 3:
        n = _int(rng, 5, 60)
        question = (
            f"{_pick(rng, NAMES)} multiplies two consecutive positive integers and gets {n * (n + 1)}. "
            "What is the larger of the two?"
        )
        return _Draft(
            question,
            str(n + 1),
            _numeric_wrong(n + 1, [n, n + 2, n * (n + 1) // 2]),
            0.2 + _magnitude(n * (n + 1), free=3),
        )
    if kind == 4:
        width, extra = _int(rng, 3, 30), _int(rng, 2, 15)
        area = width * (width + extra)
        plot = _pick(rng, ("garden", "patio", "swimming pool", "vegetable plot", "courtyard"))
        question = (
            f"{_pick(rng, NAMES)}'s rectangular {plot} is {extra} m longer than it is wide, and its area is {area} "
            "square metres. How wide is it, in metres?"
        )
        return _Draft(question, str(width), _numeric_wrong(width, [width + extra, area // extra, width - 1]), 0.5)
    if rng.random() < 0.5:
        while True:
            a, b, c = _int(rng, 1, 9) * _pick(rng, (1, -1)), _int(rng, -20, 20), _int(rng, -30, 30)
            if c:
                break
        discriminant = b * b - 4 * a * c
        gold = 2 if discriminant > 0 else 1 if discriminant == 0 else 0
        question = f"How many real solutions does {_linear([(a, 'x^2'), (b, 'x'), (c, '')])} = 0 have?"
        return _Draft(
            question, str(gold), _numeric_wrong(gold, [(gold + 1) % 3, (gold + 2) % 3, 4], positive=False), 0.3
        )
    p, q = _int(rng, 1, 5), _int(rng, 2, 20)
    question = _pick(
        rng,
        (
            f"For which positive value of k does {_linear([(p * p, 'x^2')])} + kx + {q * q} = 0 have exactly one real "
            "solution?",
            f"For which positive k does the graph of y = {_linear([(p * p, 'x^2')])} + kx + {q * q} touch the "
            "x-axis at exactly one point?",
        ),
    )
    gold = 2 * p * q
    return _Draft(question, str(gold), _numeric_wrong(gold, [p * q, 4 * p * q, q * q]), 0.5 + 0.2 * (p > 1))


_COLOURS = ("red", "blue", "green")


def _math_probability(rng: Rng) -> _Draft:
    name = _pick(rng, NAMES)
    kind = int(rng.integers(5))
    if kind <= 1:
        counts = [_int(rng, 2, 12) for _ in range(3)]
        total = sum(counts)
        which = int(rng.integers(3))
        colour, c = _COLOURS[which], counts[which]
        bag = f"A bag holds {counts[0]} red, {counts[1]} blue and {counts[2]} green marbles."
        if kind == 0:
            gold = Fraction(c, total)
            question = f"{bag} {name} draws one marble at random. What is the probability that it is {colour}?"
            candidates = [Fraction(c, total - c), Fraction(1, 3), Fraction(c + 1, total)]
            return _Draft(question, _ratio(gold), _numeric_wrong(gold, candidates, fmt=_ratio), 0.0)
        gold = Fraction(c * (c - 1), total * (total - 1))
        question = (
            f"{bag} {name} draws two marbles at random without replacement. What is the probability that both are "
            f"{colour}?"
        )
        candidates = [Fraction(c * c, total * total), Fraction(c * (c - 1), total * total), Fraction(c, total)]
        return _Draft(question, _ratio(gold), _numeric_wrong(gold, candidates, fmt=_ratio), 0.5)
    if kind == 2:
        s = _int(rng, 2, 12)
        ways = 6 - abs(s - 7)
        gold = Fraction(ways, 36)
        question = f"{name} rolls two fair six-sided dice. What is the probability that the two numbers add up to {s}?"
        candidates = [Fraction(1, 11), Fraction(ways + 1, 36), Fraction(ways, 12)]
        return _Draft(question, _ratio(gold), _numeric_wrong(gold, candidates, fmt=_ratio), 0.2)
    if kind == 3:
        n = _int(rng, 2, 5)
        gold = 1 - Fraction(5, 6) ** n
        face = _pick(rng, ("one", "two", "three", "four", "five", "six"))
        question = (
            f"{name} rolls a fair six-sided die {n} times. What is the probability of rolling at least one {face}?"
        )
        candidates = [Fraction(n, 6), Fraction(5, 6) ** n, 1 - Fraction(1, 6) ** n]
        return _Draft(question, _ratio(gold), _numeric_wrong(gold, candidates, fmt=_ratio), 0.5 + 0.1 * n)
    n = _int(rng, 3, 10)
    k = _int(rng, 1, n - 1)
    gold = Fraction(math.comb(n, k), 2**n)
    question = f"{name} tosses a fair coin {n} times. What is the probability of getting exactly {k} heads?"
    candidates = [Fraction(k, n), Fraction(1, 2**n), Fraction(math.comb(n, k), 2 ** (n + 1))]
    return _Draft(question, _ratio(gold), _numeric_wrong(gold, candidates, fmt=_ratio), 0.4 + 0.05 * n)


_TRIPLES = ((3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25), (20, 21, 29), (9, 40, 41))


def _pi(k: int | Fraction) -> str:
    return "π" if k == 1 else f"{_exact(k)}π"


def _math_geometry(rng: Rng) -> _Draft:
    kind = int(rng.integers(6))
    if kind == 0:
        scale = _int(rng, 1, 6)
        a, b, c = (side * scale for side in _pick(rng, _TRIPLES))
        name = _pick(rng, NAMES)
        if rng.random() < 0.5:
            question = _pick(
                rng,
                (
                    f"A right triangle drawn by {name} has legs of length {a} and {b}. How long is its hypotenuse?",
                    f"{name} walks {a} m east and then {b} m north. How far, in metres, is {name} from the start?",
                    f"The foot of {name}'s ladder stands {a} m from a wall and its top touches the wall {b} m above "
                    "the ground. How long is the ladder, in metres?",
                ),
            )
            return _Draft(question, str(c), _numeric_wrong(c, [a + b, c + 1, a * b // 2]), _magnitude(c))
        question = (
            f"{name} sketches a right triangle with a hypotenuse of length {c} and one leg of length {a}. "
            "How long is the other leg?"
        )
        return _Draft(question, str(b), _numeric_wrong(b, [c - a, b + 1, c + a]), 0.3 + _magnitude(c))
    if kind == 1:
        r = _int(rng, 2, 20)
        given = f"radius {r} m" if rng.random() < 0.5 else f"diameter {2 * r} m"
        shape = f"{_pick(rng, NAMES)}'s circular {_pick(rng, ('pond', 'table', 'rug', 'flower bed', 'clock face'))}"
        if rng.random() < 0.5:
            question = f"{shape} has a {given}. What is its area? Give the answer in terms of π."
            gold = _pi(r * r)
            wrong = _three_wrong(gold, [_pi(2 * r), _pi(4 * r * r), _pi(r)], lambda k: _pi(r * r + k))
        else:
            question = f"{shape} has a {given}. What is its circumference? Give the answer in terms of π."
            gold = _pi(2 * r)
            wrong = _three_wrong(gold, [_pi(r * r), _pi(r), _pi(4 * r)], lambda k: _pi(2 * r + k))
        return _Draft(question, gold, wrong, 0.3 * given.startswith("diameter"))
    if kind == 2:
        asked = int(rng.integers(3))
        drawer = _pick(rng, NAMES)
        if asked == 0:
            n = _int(rng, 5, 20)
            gold = (n - 2) * 180
            question = (
                f"{drawer} draws a convex polygon with {n} sides. What is the sum of its interior angles, in degrees?"
            )
            candidates = [n * 180, (n - 1) * 180, (n - 3) * 180]
            extra = 0.1
        elif asked == 1:
            n = _pick(rng, (5, 6, 8, 9, 10, 12, 15, 18, 20, 24, 30, 36))
            gold = 180 - 360 // n
            question = (
                f"{drawer} designs a tile shaped like a regular polygon with {n} sides. "
                "What is the measure, in degrees, of each interior angle?"
            )
            candidates = [360 // n, 180 - 180 // n, (n - 2) * 180]
            extra = 0.3
        else:
            n = _int(rng, 5, 30)
            gold = n * (n - 3) // 2
            question = (
                f"{drawer} draws every diagonal of a convex polygon with {n} sides. How many diagonals are there?"
            )
            candidates = [n * (n - 1) // 2, n * (n - 3), n * (n - 2) // 2]
            extra = 0.4
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates), extra)
    if kind == 3:
        scale = _int(rng, 1, 3)
        dx, dy, c = (side * scale for side in _pick(rng, _TRIPLES[:4]))
        x1, y1 = _int(rng, -10, 10), _int(rng, -10, 10)
        x2, y2 = x1 + dx * _pick(rng, (1, -1)), y1 + dy * _pick(rng, (1, -1))
        question = f"What is the distance between the points ({x1}, {y1}) and ({x2}, {y2})?"
        return _Draft(question, str(c), _numeric_wrong(c, [dx + dy, c * c, abs(dx - dy)]), 0.3)
    if kind == 4:
        while True:
            pts = [(_int(rng, -9, 9), _int(rng, -9, 9)) for _ in range(3)]
            cross = (pts[1][0] - pts[0][0]) * (pts[2][1] - pts[0][1]) - (pts[2][0] - pts[0][0]) * (
                pts[1][1] - pts[0][1]
            )
            if cross:
                break
        gold = Fraction(abs(cross), 2)
        shown = ", ".join(f"({x}, {y})" for x, y in pts)
        question = f"What is the area of the triangle with vertices {shown}?"
        return _Draft(question, _exact(gold), _numeric_wrong(gold, [abs(cross), gold / 2, gold + 1]), 0.6)
    a, b = _int(rng, 2, 40), _int(rng, 2, 40)
    perimeter = 2 * (a + b)
    question = (
        f"A rectangle has a perimeter of {perimeter} cm and one side of length {a} cm. "
        "What is its area in square centimetres?"
    )
    return _Draft(
        question, str(a * b), _numeric_wrong(a * b, [a * (perimeter // 2), 2 * a * b, a * (perimeter - a)]), 0.3
    )


def _count_integers(predicate: Callable[[int], bool]) -> int:
    return sum(1 for v in range(-400, 401) if predicate(v))


def _math_inequalities(rng: Rng) -> _Draft:
    kind = int(rng.integers(5))
    if kind == 0:
        a, b, c = _int(rng, 2, 9), _int(rng, 1, 40), _int(rng, -20, 80)
        strict = rng.random() < 0.5
        gold = (c + b) // a + 1 if strict else -((-(c + b)) // a)
        sign = ">" if strict else ">="
        question = f"What is the smallest integer x that satisfies {a}x - {b} {sign} {c}?"
        wrong = _numeric_wrong(gold, [gold - 1, (c - b) // a + 1, gold + 1], positive=False)
        return _Draft(question, str(gold), wrong, 0.2 + _magnitude(c + b))
    if kind == 1:
        a, b = _int(rng, -20, 20), _int(rng, 2, 30)
        strict = rng.random() < 0.5
        gold = 2 * b - 1 if strict else 2 * b + 1
        inner = f"x - {a}" if a >= 0 else f"x + {-a}"
        question = f"How many integers x satisfy |{inner}| {'<' if strict else '<='} {b}?"
        return _Draft(question, str(gold), _numeric_wrong(gold, [2 * b, 2 * b + 1 if strict else 2 * b - 1, b]), 0.3)
    if kind == 2:
        p, q, r = _int(rng, 2, 5), _int(rng, -10, 10), _int(rng, 3, 30)
        gold = _count_integers(lambda v: abs(p * v + q) <= r)
        question = f"How many integers x satisfy |{_linear([(p, 'x'), (q, '')])}| <= {r}?"
        return _Draft(question, str(gold), _numeric_wrong(gold, [gold + 1, 2 * r + 1, gold - 1]), 0.6)
    if kind == 3:
        lo, hi = sorted(_sample(rng, range(-15, 16), 2))
        strict = rng.random() < 0.5
        poly = _linear([(1, "x^2"), (-(lo + hi), "x"), (lo * hi, "")])
        gold = hi - lo - 1 if strict else hi - lo + 1
        question = _pick(
            rng,
            (
                f"How many integers x satisfy {poly} {'<' if strict else '<='} 0?",
                f"For how many integer values of x is {poly} {'negative' if strict else 'zero or negative'}?",
            ),
        )
        other = hi - lo + 1 if strict else hi - lo - 1
        return _Draft(question, str(gold), _numeric_wrong(gold, [hi - lo, other, gold + 2]), 0.5)
    a, b = _int(rng, -20, 10), _int(rng, -9, 9)
    c = a + _int(rng, 4, 40)
    gold = _count_integers(lambda v: a < 2 * v + b <= c)
    question = f"How many integers x satisfy {a} < {_linear([(2, 'x'), (b, '')])} <= {c}?"
    return _Draft(question, str(gold), _numeric_wrong(gold, [c - a, gold + 1, gold - 1]), 0.4)


_WORDS = ("BANANA", "BALLOON", "COMMITTEE", "MISSISSIPPI", "PEPPER", "LETTER", "APPLE", "RABBIT", "STATISTICS",
          "COFFEE", "TOMATO", "CANADA", "ASSESS", "BOOKKEEPER", "PARALLEL", "GARDEN", "PLANET", "SUCCESS", "PUZZLE",
          "ALGEBRA", "MAMMAL", "GIRAFFE", "CHEETAH", "BUBBLE", "NOODLE", "KITTEN", "ELEPHANT", "TENNESSEE",
          "HAPPINESS", "CALCULUS", "RECORDER", "ATTITUDE")  # fmt: skip


def _math_combinatorics(rng: Rng) -> _Draft:
    kind = int(rng.integers(6))
    name = _pick(rng, NAMES)
    if kind == 0:
        word = _pick(rng, _WORDS)
        counts = [word.count(ch) for ch in sorted(set(word))]
        gold = math.factorial(len(word)) // math.prod(math.factorial(c) for c in counts)
        question = _pick(
            rng,
            (
                f"{name} writes the word {word} on a card. How many distinct arrangements of its letters are there?",
                f"{name} rearranges the letter tiles of the word {word}. How many distinct strings can {name} make?",
                f"In how many distinct orders can {name} write the letters of {word}?",
            ),
        )
        candidates = [math.factorial(len(word)), math.factorial(len(word)) // math.factorial(max(counts)), gold * 2]
        return _Draft(
            question,
            str(gold),
            _numeric_wrong(gold, candidates),
            0.3 * (len(counts) < len(word)) + _magnitude(gold, weight=0.15),
        )
    if kind == 1:
        n, k = _int(rng, 6, 25), _int(rng, 2, 6)
        gold = math.comb(n, k)
        question = f"In how many ways can a club of {n} members, including {name}, choose a committee of {k}?"
        return _Draft(
            question,
            str(gold),
            _numeric_wrong(gold, [math.perm(n, k), math.comb(n, k - 1), n * k]),
            _magnitude(gold, weight=0.15),
        )
    if kind == 2:
        men, women, k = _int(rng, 4, 10), _int(rng, 3, 8), _int(rng, 3, 5)
        gold = math.comb(men + women, k) - math.comb(men, k)
        question = (
            f"A team of {k} is chosen from {men} men and {women} women, {name} among them. How many teams contain at "
            "least one woman?"
        )
        candidates = [
            math.comb(men + women, k),
            women * math.comb(men + women - 1, k - 1),
            women * math.comb(men, k - 1),
        ]
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.6 + _magnitude(gold, weight=0.15))
    if kind == 3:
        right, up = _int(rng, 2, 8), _int(rng, 2, 8)
        gold = math.comb(right + up, right)
        question = (
            f"{name} walks along grid lines from (0, 0) to ({right}, {up}), each step going one unit right or one "
            "unit up. How many different routes are there?"
        )
        return _Draft(
            question,
            str(gold),
            _numeric_wrong(gold, [right * up, 2 ** (right + up), right + up]),
            0.3 + _magnitude(gold, weight=0.15),
        )
    if kind == 4:
        n = _int(rng, 4, 9)
        gold = math.factorial(n - 1)
        seat = _pick(rng, ("round table", "campfire", "circular bench"))
        question = (
            f"In how many ways can {n} people, {name} among them, sit around a {seat} if only their order around the "
            "circle matters?"
        )
        candidates = [math.factorial(n), math.factorial(n - 1) // 2, math.factorial(n) // 2]
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.4)
    digits = sorted(_sample(rng, range(1, 10), _int(rng, 4, 8)))
    length = _int(rng, 2, min(5, len(digits)))
    gold = math.perm(len(digits), length)
    shown = ", ".join(str(d) for d in digits)
    question = f"How many {length}-digit numbers can be formed from the digits {shown} if no digit may be repeated?"
    candidates = [len(digits) ** length, math.comb(len(digits), length), math.perm(len(digits), length - 1)]
    return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.3)


def _math_number_theory(rng: Rng) -> _Draft:
    kind = int(rng.integers(6))
    if kind == 0:
        g = _int(rng, 2, 30)
        a1, b1 = _sample(rng, (2, 3, 4, 5, 7, 9, 11, 13, 16, 17), 2)
        while math.gcd(a1, b1) != 1:
            b1 += 1
        a, b = g * a1, g * b1
        if rng.random() < 0.5:
            question = f"What is the greatest common divisor of {a} and {b}?"
            return _Draft(question, str(g), _numeric_wrong(g, [2 * g, g // 2, math.lcm(a, b)]), _magnitude(a, b))
        gold = math.lcm(a, b)
        question = f"What is the least common multiple of {a} and {b}?"
        return _Draft(question, str(gold), _numeric_wrong(gold, [a * b, g, gold // 2]), 0.1 + _magnitude(a, b))
    if kind == 1:
        a, k, m = _int(rng, 2, 12), _int(rng, 20, 500), _int(rng, 5, 17)
        gold = pow(a, k, m)
        question = f"What is the remainder when {a}^{k} is divided by {m}?"
        wrong = _numeric_wrong(gold, [(a * k) % m, pow(a, k % m, m), (gold + 1) % m], positive=False)
        return _Draft(question, str(gold), wrong, 0.4 + _magnitude(k, free=2, weight=0.2))
    if kind == 2:
        primes = (2, 3, 5, 7, 11, 13)
        while True:
            exps = [
                _int(rng, 0, 5),
                _int(rng, 0, 3),
                _int(rng, 0, 2),
                _int(rng, 0, 1),
                _int(rng, 0, 1),
                _int(rng, 0, 1),
            ]
            n = math.prod(p**e for p, e in zip(primes, exps, strict=True))
            if 12 <= n <= 100000:
                break
        if rng.random() < 0.3:
            gold = math.prod((p ** (e + 1) - 1) // (p - 1) for p, e in zip(primes, exps, strict=True))
            question = f"What is the sum of all positive divisors of {n}?"
            candidates = [gold - n, 2 * n, gold + 1]
            return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.6 + _magnitude(n, weight=0.15))
        gold = math.prod(e + 1 for e in exps)
        question = _pick(rng, (f"How many positive divisors does {n} have?", f"How many positive integers divide {n}?"))
        candidates = [sum(exps) + 1, math.prod(e for e in exps if e), gold + 1]
        return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.3 + _magnitude(n, weight=0.15))
    if kind == 3:
        a, n = _int(rng, 2, 99), _int(rng, 10, 2000)
        gold = pow(a, n, 10)
        question = f"What is the units digit of {a}^{n}?"
        wrong = _numeric_wrong(gold, [(a % 10 * n) % 10, pow(a, n - 1, 10), a % 10], positive=False)
        return _Draft(question, str(gold), wrong, 0.3 + _magnitude(n, weight=0.15))
    if kind == 4:
        m1, m2 = _sample(rng, (3, 4, 5, 7, 8, 9, 11, 13), 2)
        while math.gcd(m1, m2) != 1:
            m2 += 1
        r1, r2 = _int(rng, 1, m1 - 1), _int(rng, 1, m2 - 1)
        gold = next(v for v in range(1, m1 * m2 + 1) if v % m1 == r1 and v % m2 == r2)
        question = (
            f"What is the smallest positive integer that leaves a remainder of {r1} when divided by {m1} and a "
            f"remainder of {r2} when divided by {m2}?"
        )
        return _Draft(question, str(gold), _numeric_wrong(gold, [gold + m1 * m2, m1 * m2 + r1, gold + m1]), 0.6)
    low = _int(rng, 1, 150)
    high = low + _int(rng, 15, 120)
    gold = sum(1 for v in range(max(low + 1, 2), high) if all(v % d for d in range(2, math.isqrt(v) + 1)))
    question = f"How many prime numbers are greater than {low} and less than {high}?"
    candidates = [gold + 1, gold - 1, round((high - low) / math.log(high))]
    return _Draft(question, str(gold), _numeric_wrong(gold, candidates), 0.2 + _magnitude(high, weight=0.2))


def _cx(re: int, im: int, spaced: bool = False) -> str:
    """a+bi with integer parts: '3+4i', '-2i', '5', 'i'; `spaced` writes '3 + 4i' for question text."""
    if im == 0:
        return str(re)
    imag = "i" if abs(im) == 1 else f"{abs(im)}i"
    if re == 0:
        return imag if im > 0 else f"-{imag}"
    sign = "+" if im > 0 else "-"
    return f"{re} {sign} {imag}" if spaced else f"{re}{sign}{imag}"


def _math_complex_numbers(rng: Rng) -> _Draft:
    kind = int(rng.integers(6))

    def nonzero(low: int, high: int) -> int:
        return _pick(rng, [v for v in range(low, high + 1) if v])

    if kind == 0:
        a, b, c, d = (nonzero(-9, 9) for _ in range(4))
        re, im = a * c - b * d, a * d + b * c
        question = f"Compute ({_cx(a, b, True)})({_cx(c, d, True)}), where i^2 = -1."
        gold = _cx(re, im)
        wrong = _three_wrong(gold, [_cx(a * c + b * d, im), _cx(a * c, b * d), _cx(re, -im)], lambda k: _cx(re + k, im))
        return _Draft(question, gold, wrong, _magnitude(re, im))
    if kind == 1:
        scale = _int(rng, 1, 5)
        a, b, c = (side * scale for side in _pick(rng, _TRIPLES))
        if rng.random() < 0.5:
            a, b = b, a
        a, b = a * _pick(rng, (1, -1)), b * _pick(rng, (1, -1))
        question = _pick(
            rng,
            (
                f"What is the modulus of the complex number {_cx(a, b, True)}?",
                f"Find |z| for z = {_cx(a, b, True)}.",
                f"How far from the origin of the complex plane is the point {_cx(a, b, True)}?",
            ),
        )
        return _Draft(
            question, str(c), _numeric_wrong(c, [abs(a) + abs(b), c * c, abs(abs(a) - abs(b))]), 0.1 + _magnitude(c)
        )
    if kind == 2:
        n = _int(rng, 10, 999)
        powers = ("1", "i", "-1", "-i")
        gold = powers[n % 4]
        question = _pick(
            rng, (f"Simplify i^{n}, where i^2 = -1.", f"What is the value of i^{n} if i is the imaginary unit?")
        )
        wrong = (powers[(n - 1) % 4], powers[(n + 1) % 4], powers[(n + 2) % 4])
        return _Draft(question, gold, wrong, 0.2 + _magnitude(n, weight=0.2))
    if kind == 3:
        a, b = nonzero(-6, 6), nonzero(-6, 6)
        c, d = nonzero(-5, 5), nonzero(-5, 5)
        product = (a * c - b * d, a * d + b * c)
        question = f"Compute ({_cx(*product, True)}) / ({_cx(c, d, True)}), where i^2 = -1."
        gold = _cx(a, b)
        wrong = _three_wrong(gold, [_cx(a, -b), _cx(b, a), _cx(-a, -b)], lambda k: _cx(a + k, b))
        return _Draft(question, gold, wrong, 0.6 + _magnitude(*product))
    if kind == 4:
        a, b = nonzero(-12, 12), nonzero(-12, 12)
        gold = a * a + b * b
        question = f"If z = {_cx(a, b, True)} and z* is its complex conjugate, what is z·z*?"
        return _Draft(
            question, str(gold), _numeric_wrong(gold, [a * a - b * b, 2 * a, (a + b) ** 2], positive=False), 0.1
        )
    a, b = nonzero(-12, 12), _int(rng, 1, 12)
    equation = _linear([(1, "x^2"), (-2 * a, "x"), (a * a + b * b, "")])
    question = _pick(
        rng,
        (
            f"The equation {equation} = 0 has two complex roots. Which root has a positive imaginary part?",
            f"Find the root of {equation} = 0 whose imaginary part is positive.",
        ),
    )
    gold = _cx(a, b)
    wrong = _three_wrong(gold, [_cx(-a, b), _cx(a, b * b), _cx(b, a)], lambda k: _cx(a, b + k))
    return _Draft(question, gold, wrong, 0.6)


# =====================================================================================================================
# code: HumanEval-like function specifications. Visible complexity: extra requirements and edge cases.

_Example = tuple[str, str] | None
"""(call arguments, expected result already formatted for the text), or None when the spec gives no example."""


@dataclass(frozen=True)
class _Spec:
    names: tuple[str, ...]
    signature: str
    make: Callable[[Rng], tuple[str, _Example]]  # -> (what the function does, example)
    requirements: tuple[str, ...]
    edge_cases: tuple[str, ...]
    offset: float = 0.0


_CODE_LEADS = (
    "Write a Python function `{sig}` that {core}.",
    "Implement `{sig}` in Python so that it {core}.",
    "Complete the Python function `{sig}`, which {core}.",
    "Define `{sig}`, a Python function that {core}.",
)
_WORDS_FOR_EXAMPLES = (
    "apple", "river", "stone", "cloud", "tiger", "maple", "orbit", "lemon", "piano", "candle", "forest", "garden",
    "rocket", "silver", "window", "pepper", "harbor", "meadow", "violet", "zebra", "ink", "owl", "moss", "fig",
    "sun", "pearl", "ember", "quartz", "tulip", "walnut",
)  # fmt: skip
_PALINDROMES = ("racecar", "refer", "rotor", "civic", "kayak", "madam", "noon", "radar", "stats", "deified")


def _code(value: object) -> str:
    return f"`{value!r}`"


def _words(rng: Rng, low: int, high: int) -> list[str]:
    return _sample(rng, _WORDS_FOR_EXAMPLES, _int(rng, low, high))


def _ints(rng: Rng, count: int, low: int, high: int) -> list[int]:
    return [_int(rng, low, high) for _ in range(count)]


def _fixed(core: str, example: Callable[[Rng], _Example]) -> Callable[[Rng], tuple[str, _Example]]:
    """A spec whose wording is fixed and whose example is drawn at random."""
    return lambda rng: (core, example(rng))


def _ex_reverse_words(rng: Rng) -> _Example:
    words = _words(rng, 3, 5)
    return repr(" ".join(words)), _code(" ".join(reversed(words)))


def _ex_count_vowels(rng: Rng) -> _Example:
    text = " ".join(_words(rng, 1, 3))
    return repr(text), _code(sum(ch in "aeiou" for ch in text))


def _ex_palindrome(rng: Rng) -> _Example:
    word = _pick(rng, _PALINDROMES) if rng.random() < 0.5 else _pick(rng, _WORDS_FOR_EXAMPLES)
    return repr(word), _code(word == word[::-1])


def _ex_caesar(rng: Rng) -> _Example:
    word, k = _pick(rng, _WORDS_FOR_EXAMPLES), _int(rng, 1, 5)
    shifted = "".join(chr((ord(ch) - 97 + k) % 26 + 97) for ch in word)
    return f"{word!r}, {k}", _code(shifted)


def _ex_keep_even(rng: Rng) -> _Example:
    numbers = _ints(rng, _int(rng, 5, 8), 1, 50)
    return repr(numbers), _code([v for v in numbers if v % 2 == 0])


def _ex_long_words(rng: Rng) -> _Example:
    words, k = _words(rng, 4, 6), _int(rng, 3, 5)
    return f"{words!r}, {k}", _code([w for w in words if len(w) > k])


def _ex_in_range(rng: Rng) -> _Example:
    values = _ints(rng, _int(rng, 5, 8), -20, 40)
    low = _int(rng, -10, 10)
    high = low + _int(rng, 5, 25)
    return f"{values!r}, {low}, {high}", _code([v for v in values if low <= v <= high])


def _ex_divisible(rng: Rng) -> _Example:
    numbers = _sample(rng, range(1, 61), 8)
    k, m = _int(rng, 2, 5), _int(rng, 6, 10)
    return f"{numbers!r}, {k}, {m}", _code([v for v in numbers if v % k == 0 and v % m])


def _ex_word_counts(rng: Rng) -> _Example:
    vocabulary = _words(rng, 2, 3)
    text = [_pick(rng, vocabulary) for _ in range(_int(rng, 4, 7))]
    counts: dict[str, int] = {}
    for word in text:
        counts[word] = counts.get(word, 0) + 1
    return repr(" ".join(text)), _code(counts)


def _ex_char_histogram(rng: Rng) -> _Example:
    word = _pick(rng, _WORDS_FOR_EXAMPLES)
    counts: dict[str, int] = {}
    for ch in word:
        counts[ch] = counts.get(ch, 0) + 1
    return repr(word), _code(counts)


def _ex_most_common(rng: Rng) -> _Example:
    first, second, third = _words(rng, 3, 3)
    items = [first] * 3 + [second] * 2 + [third]
    items = [items[int(j)] for j in rng.permutation(len(items))]
    return repr(items), _code(first)


def _ex_group_by_initial(rng: Rng) -> _Example:
    words = _words(rng, 4, 6)
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word)
    return repr(words), _code(groups)


def _ex_inventory(rng: Rng) -> _Example:
    products = _sample(rng, ("bolts", "nuts", "screws", "washers", "hinges", "nails"), 3)
    records = [(_pick(rng, products), _int(rng, 1, 9)) for _ in range(_int(rng, 4, 6))]
    totals: dict[str, int] = {}
    for name, quantity in records:
        totals[name] = totals.get(name, 0) + quantity
    return repr(records), _code(totals)


def _ex_sort_by_length(rng: Rng) -> _Example:
    words = _words(rng, 4, 6)
    return repr(words), _code(sorted(words, key=lambda w: (len(w), w)))


def _ex_sort_people(rng: Rng) -> _Example:
    people = [(name, _int(rng, 10, 70)) for name in _sample(rng, NAMES, _int(rng, 3, 5))]
    return repr(people), _code(sorted(people, key=lambda p: (-p[1], p[0])))


def _ex_top_k(rng: Rng) -> _Example:
    names = _sample(rng, NAMES, _int(rng, 4, 6))
    scores = dict(zip(names, _sample(rng, range(10, 100), len(names)), strict=True))
    k = _int(rng, 1, 3)
    return f"{scores!r}, {k}", _code(sorted(scores, key=lambda n: -scores[n])[:k])


def _ex_sort_by_last(rng: Rng) -> _Example:
    words = _words(rng, 4, 6)
    return repr(words), _code(sorted(words, key=lambda w: w[-1]))


def _ex_parse_pairs(rng: Rng) -> _Example:
    keys = _sample(rng, ("host", "port", "user", "mode", "retries", "timeout", "colour", "region"), _int(rng, 2, 4))
    pairs = {key: str(_int(rng, 1, 99)) for key in keys}
    return repr(";".join(f"{k}={v}" for k, v in pairs.items())), _code(pairs)


def _ex_to_minutes(rng: Rng) -> _Example:
    hours, minutes = _int(rng, 0, 23), _int(rng, 0, 59)
    return repr(f"{hours:02d}:{minutes:02d}"), _code(60 * hours + minutes)


def _ex_parse_version(rng: Rng) -> _Example:
    parts = _ints(rng, _int(rng, 2, 4), 0, 20)
    return repr(".".join(map(str, parts))), _code(tuple(parts))


def _ex_evaluate_sum(rng: Rng) -> _Example:
    numbers = _ints(rng, _int(rng, 3, 5), 1, 60)
    text, total = str(numbers[0]), numbers[0]
    for value in numbers[1:]:
        if rng.random() < 0.5:
            text, total = f"{text}+{value}", total + value
        else:
            text, total = f"{text}-{value}", total - value
    return repr(text), _code(total)


def _ex_pair_with_sum(rng: Rng) -> _Example:
    for _ in range(20):
        numbers = sorted(_sample(rng, range(-10, 40), _int(rng, 5, 8)))
        i, j = sorted(_sample(rng, range(len(numbers)), 2))
        target = numbers[i] + numbers[j]
        pairs = [
            (a, b) for a in range(len(numbers)) for b in range(a + 1, len(numbers)) if numbers[a] + numbers[b] == target
        ]
        if len(pairs) == 1:
            return f"{numbers!r}, {target}", _code((i, j))
    return None


def _ex_dedupe_sorted(rng: Rng) -> _Example:
    numbers = sorted(_ints(rng, _int(rng, 6, 9), 0, 8))
    return repr(numbers), _code(len(set(numbers)))


def _ex_merge_sorted(rng: Rng) -> _Example:
    a, b = sorted(_ints(rng, _int(rng, 2, 5), 0, 30)), sorted(_ints(rng, _int(rng, 2, 5), 0, 30))
    return f"{a!r}, {b!r}", _code(sorted(a + b))


def _ex_longest_unique(rng: Rng) -> _Example:
    s = "".join(_pick(rng, "abcdef") for _ in range(_int(rng, 7, 11)))
    best = max(j - i for i in range(len(s)) for j in range(i + 1, len(s) + 1) if len(set(s[i:j])) == j - i)
    return repr(s), _code(best)


def _ex_flatten(rng: Rng) -> _Example:
    values = iter(_ints(rng, 6, 1, 9))
    nested = [next(values), [next(values), [next(values), next(values)]], [[next(values)], next(values)]]
    flat: list[int] = []

    def walk(item: object) -> None:
        if isinstance(item, list):
            for inner in item:
                walk(inner)
        else:
            flat.append(item)  # type: ignore[arg-type]

    walk(nested)
    return repr(nested), _code(flat)


def _ex_power_set(rng: Rng) -> _Example:
    items = _sample(rng, range(1, 20), _int(rng, 2, 4))
    return repr(items), f"a list of {2 ** len(items)} subsets"


def _ex_permutations(rng: Rng) -> _Example:
    letters = "".join(_sample(rng, "abcdefgh", _int(rng, 3, 4)))
    return repr(letters), f"a list of {math.factorial(len(letters))} strings"


def _ex_hanoi(rng: Rng) -> _Example:
    n = _int(rng, 2, 6)
    return str(n), f"a list of {2**n - 1} moves"


def _random_intervals(rng: Rng, count: int) -> list[tuple[int, int]]:
    """Randomly paired distinct endpoints: intervals overlap often, but never merely touch."""
    ends = _sample(rng, range(0, 40), 2 * count)
    return [(min(ends[2 * j : 2 * j + 2]), max(ends[2 * j : 2 * j + 2])) for j in range(count)]


def _merge(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _ex_merge_intervals(rng: Rng) -> _Example:
    intervals = _random_intervals(rng, _int(rng, 3, 5))
    return repr(intervals), _code(_merge(intervals))


def _ex_insert_interval(rng: Rng) -> _Example:
    base = _merge(_random_intervals(rng, _int(rng, 3, 4)))
    used = {v for interval in base for v in interval}
    low, high = sorted(_sample(rng, [v for v in range(0, 40) if v not in used], 2))
    new = (low, high)
    return f"{base!r}, {new!r}", _code(_merge([*base, new]))


def _ex_meeting_rooms(rng: Rng) -> _Example:
    meetings = _random_intervals(rng, _int(rng, 3, 5))
    events = sorted([(s, 1) for s, _ in meetings] + [(e, -1) for _, e in meetings], key=lambda t: (t[0], t[1]))
    rooms = best = 0
    for _, delta in events:
        rooms += delta
        best = max(best, rooms)
    return repr(meetings), _code(best)


def _ex_covered_length(rng: Rng) -> _Example:
    intervals = _random_intervals(rng, _int(rng, 2, 4))
    return repr(intervals), _code(sum(e - s for s, e in _merge(intervals)))


def _ex_free_slots(rng: Rng) -> _Example:
    busy = _merge(_random_intervals(rng, _int(rng, 2, 3)))
    day_start, day_end = min(s for s, _ in busy) - _int(rng, 1, 5), max(e for _, e in busy) + _int(rng, 1, 5)
    gaps, cursor = [], day_start
    for start, end in busy:
        if start > cursor:
            gaps.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < day_end:
        gaps.append((cursor, day_end))
    return f"{busy!r}, {day_start}, {day_end}", _code(gaps)


def _ex_components(rng: Rng) -> _Example:
    n = _int(rng, 4, 9)
    edges = [tuple(sorted(_sample(rng, range(n), 2))) for _ in range(_int(rng, 1, n - 1))]
    parent = list(range(n))

    def find(v: int) -> int:
        while parent[v] != v:
            v = parent[v]
        return v

    for a, b in edges:
        parent[find(a)] = find(b)
    return f"{n}, {edges!r}", _code(len({find(v) for v in range(n)}))


def _ex_has_cycle(rng: Rng) -> _Example:
    nodes = list("abcde"[: _int(rng, 3, 5)])
    graph = {node: [other for other in nodes[i + 1 :] if rng.random() < 0.4] for i, node in enumerate(nodes)}
    cyclic = rng.random() < 0.5
    if cyclic:
        graph[nodes[-1]].append(nodes[0])
        for i in range(len(nodes) - 1):
            if nodes[i + 1] not in graph[nodes[i]]:
                graph[nodes[i]].append(nodes[i + 1])
    return repr(graph), _code(cyclic)


def _ex_min_coins(rng: Rng) -> _Example:
    coins = list(_pick(rng, ((1, 5, 10, 25), (2, 5), (3, 7), (1, 3, 4), (5, 9, 12), (2, 6, 10))))
    amount = _int(rng, 7, 40)
    best = [0] + [math.inf] * amount
    for value in range(1, amount + 1):
        best[value] = min((best[value - c] + 1 for c in coins if c <= value), default=math.inf)
    return f"{coins!r}, {amount}", _code(int(best[amount]) if best[amount] != math.inf else -1)


def _ex_lis(rng: Rng) -> _Example:
    numbers = _ints(rng, _int(rng, 6, 9), 0, 20)
    lengths = [1] * len(numbers)
    for j in range(len(numbers)):
        for i in range(j):
            if numbers[i] < numbers[j]:
                lengths[j] = max(lengths[j], lengths[i] + 1)
    return repr(numbers), _code(max(lengths))


def _ex_edit_distance(rng: Rng) -> _Example:
    a, b = _words(rng, 2, 2)
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return f"{a!r}, {b!r}", _code(row[-1])


def _ex_knapsack(rng: Rng) -> _Example:
    count = _int(rng, 3, 5)
    weights, values, capacity = _ints(rng, count, 1, 9), _ints(rng, count, 1, 30), _int(rng, 5, 15)
    best = [0] * (capacity + 1)
    for w, v in zip(weights, values, strict=True):
        for c in range(capacity, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return f"{weights!r}, {values!r}, {capacity}", _code(best[capacity])


def _ex_climbs(rng: Rng) -> _Example:
    steps = sorted(_sample(rng, range(1, 5), _int(rng, 2, 3)))
    n = _int(rng, 4, 12)
    ways = [1] + [0] * n
    for v in range(1, n + 1):
        ways[v] = sum(ways[v - s] for s in steps if s <= v)
    return f"{n}, {steps!r}", _code(ways[n])


def _ex_is_prime(rng: Rng) -> _Example:
    n = _int(rng, 2, 200)
    return str(n), _code(all(n % d for d in range(2, math.isqrt(n) + 1)))


def _ex_digit_sum(rng: Rng) -> _Example:
    n = _int(rng, 10, 999999)
    return str(n), _code(sum(int(d) for d in str(n)))


def _make_fizz_buzz(rng: Rng) -> tuple[str, _Example]:
    a, b = _sample(rng, (2, 3, 4, 5, 7), 2)
    first, second = _sample(rng, ("Fizz", "Buzz", "Bang", "Pop", "Zap", "Whirr"), 2)
    core = (
        f"returns the strings for the numbers 1 to `n`, where multiples of {a} become '{first}', multiples of {b} "
        f"become '{second}', multiples of both become '{first}{second}' and every other number is written in digits"
    )
    n = _int(rng, 5, 8)
    out = [
        first + second if v % a == 0 and v % b == 0 else first if v % a == 0 else second if v % b == 0 else str(v)
        for v in range(1, n + 1)
    ]
    return core, (str(n), _code(out))


def _ex_to_base(rng: Rng) -> _Example:
    n, base = _int(rng, 1, 5000), _pick(rng, (2, 3, 5, 8, 12, 16))
    digits, value = "", n
    while value:
        digits = "0123456789abcdef"[value % base] + digits
        value //= base
    return f"{n}, {base}", _code(digits)


def _ex_gcd_list(rng: Rng) -> _Example:
    g = _int(rng, 2, 15)
    numbers = [g * v for v in _ints(rng, _int(rng, 2, 4), 1, 12)]
    return repr(numbers), _code(math.gcd(*numbers))


_STRING_SPECS = (
    _Spec(
        ("reverse_words", "words_backwards", "flip_word_order"),
        "(sentence: str) -> str",
        _fixed("returns the words of `sentence` in reverse order, joined by single spaces", _ex_reverse_words),
        ("treat any run of whitespace as a single separator", "keep punctuation attached to the word it follows",
         "avoid the built-in `reversed` and negative-step slicing", "run in time linear in the length of the input"),
        ("an empty string gives an empty string", "a string of only spaces gives an empty string",
         "a single word comes back unchanged", "leading and trailing spaces are dropped"),
    ),
    _Spec(
        ("count_vowels", "vowel_count", "num_vowels"),
        "(text: str) -> int",
        _fixed("returns how many of the letters a, e, i, o and u occur in `text`", _ex_count_vowels),
        ("count uppercase vowels as well", "ignore characters that are not ASCII letters",
         "raise `TypeError` when `text` is not a string", "make a single pass over the string"),
        ("an empty string gives 0", "a string without letters gives 0",
         "accented letters such as 'é' are not counted", "'y' is never counted as a vowel"),
    ),
    _Spec(
        ("is_palindrome", "reads_same_backwards"),
        "(s: str) -> bool",
        _fixed("returns True when `s` reads the same forwards and backwards", _ex_palindrome),
        ("ignore the difference between upper and lower case", "ignore spaces and punctuation",
         "use only O(1) extra space", "avoid building a reversed copy of the string"),
        ("an empty string counts as a palindrome", "a single character is a palindrome",
         "a string of only punctuation counts as a palindrome", "None raises `TypeError`"),
    ),
    _Spec(
        ("caesar_shift", "rotate_letters", "shift_cipher"),
        "(text: str, k: int) -> str",
        _fixed("shifts every lowercase letter of `text` forward by `k` places in the alphabet, wrapping from 'z' "
               "back to 'a'", _ex_caesar),
        ("shift uppercase letters too, keeping their case", "leave digits, spaces and punctuation unchanged",
         "accept a negative `k` to shift backwards", "accept any integer `k`, including values above 26"),
        ("an empty string gives an empty string", "`k` = 0 leaves the text unchanged",
         "`k` = 26 leaves the text unchanged", "a string without letters is returned as it is"),
    ),
)  # fmt: skip
_FILTER_SPECS = (
    _Spec(
        ("keep_even", "even_numbers", "filter_even"),
        "(numbers: list[int]) -> list[int]",
        _fixed("returns the even numbers of `numbers` in their original order", _ex_keep_even),
        ("leave the input list unmodified", "use a single list comprehension", "run in linear time",
         "reject bool values with a `TypeError`"),
        ("an empty list gives []", "negative even numbers are kept", "a list without even numbers gives []",
         "0 counts as even"),
    ),
    _Spec(
        ("long_words", "words_longer_than", "filter_long_words"),
        "(words: list[str], k: int) -> list[str]",
        _fixed("returns the words in `words` that have more than `k` characters", _ex_long_words),
        ("keep the original order", "drop repeated words, keeping the first occurrence",
         "strip surrounding whitespace before measuring a word", "raise `ValueError` for a negative `k`"),
        ("an empty list gives []", "`k` = 0 keeps every non-empty word", "words of exactly `k` characters are dropped",
         "no word longer than `k` gives []"),
    ),
    _Spec(
        ("values_in_range", "select_between"),
        "(values: list[float], low: float, high: float) -> list[float]",
        _fixed("returns the values that lie between `low` and `high`, both ends included", _ex_in_range),
        ("skip `None` entries", "swap `low` and `high` when they are given in the wrong order",
         "avoid the built-in `filter`", "leave the input list unmodified"),
        ("an empty list gives []", "values equal to `low` or `high` are kept",
         "`low` equal to `high` keeps only that value", "NaN values are never kept"),
    ),
    _Spec(
        ("divisible_but_not", "multiples_excluding"),
        "(numbers: list[int], k: int, m: int) -> list[int]",
        _fixed("returns the numbers divisible by `k` but not by `m`, in their original order", _ex_divisible),
        ("raise `ValueError` if `k` or `m` is zero", "return each qualifying value only once",
         "make a single pass over the list", "leave the input list unmodified"),
        ("an empty list gives []", "0 is always excluded because `m` divides it",
         "negative numbers are tested like positive ones", "`k` equal to `m` gives []"),
    ),
)  # fmt: skip
_COUNTING_SPECS = (
    _Spec(
        ("word_counts", "count_words", "word_frequencies"),
        "(text: str) -> dict[str, int]",
        _fixed("returns a dictionary mapping each word of `text` to the number of times it occurs", _ex_word_counts),
        ("count words without regard to case", "strip punctuation from both ends of each word",
         "avoid `collections.Counter`", "keep the keys in order of first appearance"),
        ("an empty string gives {}", "runs of several spaces do not create empty words",
         "a word followed by a comma counts as the same word", "newlines separate words like spaces"),
    ),
    _Spec(
        ("char_histogram", "letter_counts"),
        "(s: str) -> dict[str, int]",
        _fixed("counts how often each character of `s` appears", _ex_char_histogram),
        ("skip whitespace characters", "count letters without regard to case", "avoid `collections.Counter`",
         "make a single pass over `s`"),
        ("an empty string gives {}", "digits are counted like letters", "a string of only spaces gives {}",
         "the keys follow the order of first appearance"),
    ),
    _Spec(
        ("most_common", "mode_of", "most_frequent"),
        "(items: list[str]) -> str",
        _fixed("returns the element that occurs most often in `items`", _ex_most_common),
        ("break ties in favour of the element that appears first", "avoid sorting the list", "run in linear time",
         "avoid `collections.Counter`"),
        ("an empty list raises `ValueError`", "a list of one element returns that element",
         "when every element is distinct the first one is returned",
         "strings that differ only in case are different elements"),
    ),
    _Spec(
        ("group_by_initial", "bucket_by_first_letter"),
        "(words: list[str]) -> dict[str, list[str]]",
        _fixed("groups `words` into a dictionary keyed by their first letter", _ex_group_by_initial),
        ("use lowercase first letters as keys", "keep the words of each group in input order", "skip empty strings",
         "avoid `itertools.groupby`"),
        ("an empty list gives {}", "a word of one letter goes into that letter's group",
         "repeated words appear as many times as they occur", "words starting with a digit get their own group"),
    ),
    _Spec(
        ("inventory_totals", "sum_quantities"),
        "(records: list[tuple[str, int]]) -> dict[str, int]",
        _fixed("adds up the quantity for each product name in a list of (name, quantity) pairs", _ex_inventory),
        ("treat product names without regard to case", "reject negative quantities with `ValueError`",
         "keep products in order of first appearance", "make a single pass over the records"),
        ("an empty list gives {}", "a product listed once keeps its quantity",
         "a quantity of 0 still creates the key", "names with surrounding spaces are stripped first"),
    ),
)  # fmt: skip
_SORTING_SPECS = (
    _Spec(
        ("sort_by_length", "order_by_length"),
        "(words: list[str]) -> list[str]",
        _fixed("returns `words` sorted by length, shortest first, breaking ties alphabetically", _ex_sort_by_length),
        ("leave the input list unmodified", "compare alphabetically without regard to case",
         "use `sorted` with a key function", "keep duplicate words"),
        ("an empty list gives []", "the empty string sorts first", "a single word is returned in a new list",
         "two identical words both stay"),
    ),
    _Spec(
        ("sort_people", "order_by_age"),
        "(people: list[tuple[str, int]]) -> list[tuple[str, int]]",
        _fixed("sorts (name, age) pairs from oldest to youngest, ordering people of the same age alphabetically by "
               "name", _ex_sort_people),
        ("return a new list", "do the sorting in one call to `sorted`", "raise `ValueError` for a negative age",
         "compare names without regard to case"),
        ("an empty list gives []", "two entries with the same name and age both stay", "an age of 0 is allowed",
         "a list of one person is returned as a new list"),
    ),
    _Spec(
        ("top_k_scores", "best_k", "leaders"),
        "(scores: dict[str, float], k: int) -> list[str]",
        _fixed("returns the names with the `k` highest scores, best first", _ex_top_k),
        ("break ties by name in alphabetical order", "return every name when `k` exceeds the number of entries",
         "run in O(n log k) time using `heapq`", "raise `ValueError` for a negative `k`"),
        ("`k` = 0 gives []", "an empty dictionary gives []", "negative scores are ranked like any other",
         "scores may be floats or ints"),
    ),
    _Spec(
        ("sort_by_last_letter", "order_by_ending"),
        "(words: list[str]) -> list[str]",
        _fixed("sorts `words` by their last character, keeping words with the same last character in their original "
               "relative order", _ex_sort_by_last),
        ("compare last characters without regard to case", "leave the input list unmodified",
         "rely on the stability of Python's sort", "run in O(n log n) time"),
        ("an empty list gives []", "empty strings come first", "one-letter words sort by that letter",
         "duplicate words keep their relative order"),
    ),
)  # fmt: skip
_PARSING_SPECS = (
    _Spec(
        ("parse_pairs", "parse_settings", "parse_key_values"),
        "(text: str) -> dict[str, str]",
        _fixed("parses a string such as \"a=1;b=2\" into a dictionary of keys and values", _ex_parse_pairs),
        ("strip whitespace around keys and values", "ignore empty segments such as a trailing ';'",
         "let a later duplicate key overwrite an earlier one",
         "raise `ValueError` naming the segment when a segment has no '='"),
        ("an empty string gives {}", "a value may itself contain '=', so split only at the first one",
         "a key with an empty value maps to ''", "keys are case-sensitive"),
    ),
    _Spec(
        ("to_minutes", "minutes_after_midnight", "clock_to_minutes"),
        "(clock: str) -> int",
        _fixed("converts a 24-hour time written as \"HH:MM\" into the number of minutes after midnight",
               _ex_to_minutes),
        ("accept single-digit hours such as \"7:05\"", "raise `ValueError` for hours above 23 or minutes above 59",
         "accept surrounding whitespace", "avoid the `datetime` module"),
        ("\"00:00\" gives 0", "\"23:59\" gives 1439", "a missing colon raises `ValueError`",
         "non-digit characters raise `ValueError`"),
    ),
    _Spec(
        ("parse_version", "version_tuple"),
        "(version: str) -> tuple[int, ...]",
        _fixed("turns a dotted version string such as \"2.10.3\" into a tuple of integers, so that versions compare "
               "numerically", _ex_parse_version),
        ("ignore a leading 'v'", "raise `ValueError` for empty parts such as \"1..2\"",
         "drop a pre-release suffix such as \"-beta\" after the last number", "accept surrounding whitespace"),
        ("\"10\" gives (10,)", "leading zeros such as \"1.02\" are read as 2", "an empty string raises `ValueError`",
         "negative parts raise `ValueError`"),
    ),
    _Spec(
        ("evaluate_sum", "add_and_subtract"),
        "(expression: str) -> int",
        _fixed("evaluates an expression of non-negative integers joined by '+' and '-', such as \"12+7-3\"",
               _ex_evaluate_sum),
        ("allow spaces anywhere between numbers and operators", "avoid `eval` and `exec`",
         "raise `ValueError` when two operators follow each other", "support parentheses, such as \"10-(2+3)\""),
        ("a single number gives its value", "a leading '-' negates the first number",
         "an empty string raises `ValueError`", "multi-digit numbers are read whole"),
        0.2,
    ),
)  # fmt: skip
_TWO_POINTER_SPECS = (
    _Spec(
        ("pair_with_sum", "two_sum_sorted", "find_pair"),
        "(numbers: list[int], target: int) -> tuple[int, int] | None",
        _fixed("takes a list sorted in ascending order and returns the indices of two different positions whose "
               "values add up to `target`, or None if there are none", _ex_pair_with_sum),
        ("use O(1) extra space", "run in linear time", "leave the input list unmodified",
         "return the two indices in increasing order"),
        ("an empty list gives None", "a list of one element gives None", "a value may not be paired with itself",
         "negative numbers are allowed"),
    ),
    _Spec(
        ("dedupe_sorted", "remove_duplicates_in_place"),
        "(numbers: list[int]) -> int",
        _fixed("removes duplicates in place from the sorted list `numbers` and returns how many distinct values "
               "remain at the front of the list", _ex_dedupe_sorted),
        ("use O(1) extra space", "make a single pass", "avoid `set`", "keep the distinct values in ascending order"),
        ("an empty list gives 0", "a list whose values are all equal gives 1",
         "a list without duplicates is left as it is", "negative values are handled"),
    ),
    _Spec(
        ("merge_sorted", "merge_two_sorted_lists"),
        "(a: list[int], b: list[int]) -> list[int]",
        _fixed("merges two ascending lists into one ascending list", _ex_merge_sorted),
        ("avoid `sorted` and `list.sort`", "run in O(len(a) + len(b)) time", "keep duplicates",
         "leave both inputs unmodified"),
        ("two empty lists give []", "one empty list gives a copy of the other",
         "equal values from both lists are all kept", "lists of very different lengths are handled"),
    ),
    _Spec(
        ("longest_unique_substring", "longest_run_without_repeats"),
        "(s: str) -> int",
        _fixed("returns the length of the longest substring of `s` without repeating characters", _ex_longest_unique),
        ("run in linear time with a sliding window", "treat upper and lower case as different characters",
         "use extra space proportional to the alphabet, not to `s`", "avoid building every substring"),
        ("an empty string gives 0", "a string of one repeated character gives 1",
         "the whole string counts when it has no repeats", "spaces count as characters"),
    ),
)  # fmt: skip
_RECURSION_SPECS = (
    _Spec(
        ("flatten", "flatten_nested"),
        "(nested: list) -> list",
        _fixed("flattens arbitrarily nested lists into a single list of the non-list items, in left-to-right order",
               _ex_flatten),
        ("use recursion rather than an explicit stack", "treat tuples as items, not as nested lists",
         "leave the input unmodified", "raise `ValueError` if the nesting is deeper than 100"),
        ("an empty list gives []", "empty inner lists contribute nothing",
         "strings are items and are not split into characters", "a list that is already flat is returned as a copy"),
    ),
    _Spec(
        ("power_set", "all_subsets"),
        "(items: list[int]) -> list[list[int]]",
        _fixed("returns every subset of `items`", _ex_power_set),
        ("list the subsets in order of increasing size", "keep the elements of each subset in input order",
         "build the result recursively", "return each subset once even if `items` contains duplicates"),
        ("an empty list gives [[]]", "the result contains `items` itself", "the empty subset comes first",
         "a list of n distinct items gives 2**n subsets"),
    ),
    _Spec(
        ("permutations", "all_orderings"),
        "(s: str) -> list[str]",
        _fixed("returns every ordering of the characters of `s`", _ex_permutations),
        ("return the strings in lexicographic order", "avoid duplicate strings when `s` repeats a character",
         "avoid `itertools`", "build the orderings recursively"),
        ("an empty string gives ['']", "a single character gives a list with that character",
         "a string of n distinct characters gives n! results", "spaces are treated like any other character"),
    ),
    _Spec(
        ("hanoi_moves", "tower_of_hanoi"),
        "(n: int) -> list[tuple[str, str]]",
        _fixed("returns the moves, as (from_peg, to_peg) pairs, that transfer `n` disks from peg 'A' to peg 'C' "
               "using peg 'B' without ever placing a larger disk on a smaller one", _ex_hanoi),
        ("solve the problem recursively", "return exactly the minimum number of moves",
         "raise `ValueError` for a negative `n`", "name the pegs exactly 'A', 'B' and 'C'"),
        ("`n` = 0 gives []", "`n` = 1 gives [('A', 'C')]", "the result for `n` disks has 2**n - 1 moves",
         "the first move for an even `n` goes from 'A' to 'B'"),
    ),
)  # fmt: skip
_INTERVAL_SPECS = (
    _Spec(
        ("merge_intervals", "merge_overlapping"),
        "(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]",
        _fixed("merges all overlapping intervals and returns them sorted by start", _ex_merge_intervals),
        ("treat intervals that only touch, such as (1, 3) and (3, 5), as overlapping",
         "work when the input is not sorted", "leave the input list unmodified", "run in O(n log n) time"),
        ("an empty list gives []", "an interval inside another disappears into it",
         "a single interval is returned unchanged", "intervals whose start equals their end are kept"),
    ),
    _Spec(
        ("insert_interval", "add_interval"),
        "(intervals: list[tuple[int, int]], new: tuple[int, int]) -> list[tuple[int, int]]",
        _fixed("inserts `new` into a sorted list of non-overlapping intervals, merging wherever they overlap",
               _ex_insert_interval),
        ("run in linear time", "leave the input list unmodified", "treat touching intervals as overlapping",
         "avoid re-sorting the whole list"),
        ("an empty list gives [new]", "`new` before every interval goes first", "`new` after every interval goes last",
         "`new` covering every interval replaces them all"),
    ),
    _Spec(
        ("min_meeting_rooms", "rooms_needed"),
        "(meetings: list[tuple[int, int]]) -> int",
        _fixed("returns the minimum number of rooms needed so that no two overlapping meetings share a room",
               _ex_meeting_rooms),
        ("treat a meeting that ends exactly when another starts as not overlapping it", "run in O(n log n) time",
         "use a heap or two sorted lists of times", "leave the input unmodified"),
        ("no meetings need 0 rooms", "one meeting needs one room", "identical meetings need one room each",
         "meetings given in any order are handled"),
    ),
    _Spec(
        ("covered_length", "total_coverage"),
        "(intervals: list[tuple[float, float]]) -> float",
        _fixed("returns the total length of the number line covered by at least one interval", _ex_covered_length),
        ("run in O(n log n) time", "leave the input unmodified", "raise `ValueError` when a start exceeds its end",
         "count overlapping parts only once"),
        ("an empty list gives 0", "nested intervals count once", "intervals of zero length add nothing",
         "negative coordinates are handled"),
    ),
    _Spec(
        ("free_slots", "gaps_in_schedule"),
        "(busy: list[tuple[int, int]], day_start: int, day_end: int) -> list[tuple[int, int]]",
        _fixed("returns the free gaps between the busy intervals within the working day from `day_start` to "
               "`day_end`", _ex_free_slots),
        ("merge overlapping busy intervals first", "clip busy intervals to the working day",
         "return the gaps in chronological order", "run in O(n log n) time"),
        ("no busy intervals give the whole day", "a day fully booked gives []",
         "busy intervals outside the day are ignored", "back-to-back busy intervals leave no gap between them"),
        0.2,
    ),
)  # fmt: skip
_GRAPH_SPECS = (
    _Spec(
        ("shortest_path_length", "grid_distance"),
        "(grid: list[str]) -> int",
        _fixed("returns the number of steps on the shortest path from the top-left to the bottom-right cell of "
               "`grid`, moving up, down, left or right and never entering a '#' cell, or -1 if there is no path",
               lambda rng: None),
        ("use breadth-first search", "visit each cell at most once", "allow diagonal moves as well",
         "run in O(rows × columns) time"),
        ("a blocked start or goal cell gives -1", "a 1×1 open grid gives 0", "an empty grid raises `ValueError`",
         "rows of unequal length raise `ValueError`"),
    ),
    _Spec(
        ("count_components", "connected_parts"),
        "(n: int, edges: list[tuple[int, int]]) -> int",
        _fixed("returns the number of connected components of an undirected graph with nodes 0 to n - 1",
               _ex_components),
        ("use union-find with path compression", "run in near-linear time", "ignore self-loops",
         "ignore repeated edges"),
        ("`n` = 0 gives 0", "isolated nodes count as components",
         "an edge naming a node outside 0..n-1 raises `ValueError`", "a graph with no edges has `n` components"),
    ),
    _Spec(
        ("has_cycle", "contains_cycle"),
        "(graph: dict[str, list[str]]) -> bool",
        _fixed("reports whether the directed graph given as an adjacency dictionary contains a cycle", _ex_has_cycle),
        ("use depth-first search with three node colours", "avoid recursion so that deep graphs cannot overflow the "
         "stack", "treat nodes that appear only as targets as having no outgoing edges", "run in O(V + E) time"),
        ("an empty graph has no cycle", "a self-loop is a cycle", "two nodes pointing at each other form a cycle",
         "disconnected parts are all checked"),
    ),
    _Spec(
        ("topological_order", "task_order", "build_order"),
        "(deps: dict[str, list[str]]) -> list[str]",
        _fixed("returns an order of the tasks in which each task comes after all the tasks it depends on",
               lambda rng: None),
        ("raise `ValueError` naming a task on a cycle when no order exists",
         "break ties alphabetically so that the result is unique", "use Kahn's algorithm",
         "include tasks that appear only as dependencies"),
        ("an empty dictionary gives []", "a task with no dependencies may come first",
         "a task depending on itself raises `ValueError`", "independent chains are interleaved alphabetically"),
    ),
    _Spec(
        ("word_ladder_length", "ladder_steps"),
        "(start: str, goal: str, words: list[str]) -> int",
        _fixed("returns the number of words in the shortest chain from `start` to `goal` in which consecutive words "
               "differ in exactly one letter and every word after `start` is in `words`, or 0 if there is none",
               lambda rng: None),
        ("use breadth-first search", "precompute wildcard patterns to find neighbours quickly",
         "compare words without regard to case", "run in O(N × L^2) time for N words of length L"),
        ("`start` equal to `goal` gives 1", "a `goal` missing from `words` gives 0",
         "words of a different length are ignored", "an empty word list gives 0"),
        0.2,
    ),
)  # fmt: skip
_DP_SPECS = (
    _Spec(
        ("min_coins", "fewest_coins", "coin_change"),
        "(coins: list[int], amount: int) -> int",
        _fixed("returns the fewest coins that add up to `amount`, using each denomination any number of times, or -1 "
               "if it cannot be done", _ex_min_coins),
        ("use bottom-up dynamic programming", "run in O(len(coins) × amount) time", "ignore non-positive denominations",
         "use O(amount) memory"),
        ("`amount` = 0 gives 0", "no coins and a positive amount give -1", "a coin larger than `amount` is never used",
         "duplicate denominations are harmless"),
    ),
    _Spec(
        ("lis_length", "longest_increasing_subsequence"),
        "(numbers: list[int]) -> int",
        _fixed("returns the length of the longest strictly increasing subsequence of `numbers`", _ex_lis),
        ("run in O(n log n) time using binary search", "avoid recursion", "use O(n) extra memory",
         "leave the input unmodified"),
        ("an empty list gives 0", "a constant list gives 1", "a decreasing list gives 1",
         "negative numbers are handled"),
    ),
    _Spec(
        ("edit_distance", "levenshtein"),
        "(a: str, b: str) -> int",
        _fixed("returns the minimum number of single-character insertions, deletions and substitutions that turn `a` "
               "into `b`", _ex_edit_distance),
        ("use O(min(len(a), len(b))) memory", "fill the table bottom-up", "compare characters case-sensitively",
         "run in O(len(a) × len(b)) time"),
        ("two empty strings give 0", "an empty `a` gives len(b)", "equal strings give 0",
         "swapping two adjacent letters costs 2"),
    ),
    _Spec(
        ("knapsack", "best_value", "max_loot"),
        "(weights: list[int], values: list[int], capacity: int) -> int",
        _fixed("returns the largest total value of items whose total weight fits within `capacity`, using each item "
               "at most once", _ex_knapsack),
        ("use a one-dimensional table updated from high to low capacity", "run in O(n × capacity) time",
         "raise `ValueError` if the two lists differ in length", "skip items heavier than `capacity` early"),
        ("capacity 0 gives 0", "no items give 0", "items of weight 0 are always taken",
         "an item exactly as heavy as `capacity` may be taken alone"),
    ),
    _Spec(
        ("count_climbs", "ways_to_climb"),
        "(n: int, steps: list[int]) -> int",
        _fixed("returns the number of distinct ordered ways to climb `n` stairs when each move climbs one of the "
               "sizes in `steps`", _ex_climbs),
        ("use dynamic programming instead of plain recursion", "return the answer modulo 1_000_000_007",
         "use O(n) memory", "ignore non-positive step sizes"),
        ("`n` = 0 gives 1", "an empty `steps` gives 0 for a positive `n`", "step sizes larger than `n` never fit",
         "duplicate step sizes count once"),
    ),
)  # fmt: skip
_NUMBER_SPECS = (
    _Spec(
        ("is_prime", "check_prime"),
        "(n: int) -> bool",
        _fixed("returns True when `n` is a prime number", _ex_is_prime),
        ("test divisors only up to the square root of `n`", "stay fast for `n` up to 10**12",
         "raise `TypeError` for non-integers", "skip even divisors after 2"),
        ("numbers below 2 are not prime", "2 is prime", "negative numbers give False", "1 gives False"),
    ),
    _Spec(
        ("digit_sum", "sum_of_digits"),
        "(n: int) -> int",
        _fixed("returns the sum of the decimal digits of `n`", _ex_digit_sum),
        ("use arithmetic instead of converting `n` to a string", "raise `TypeError` for non-integers",
         "run in time proportional to the number of digits", "avoid recursion"),
        ("0 gives 0", "a negative number uses its absolute value", "a single digit returns itself",
         "very large integers work"),
    ),
    _Spec(
        ("fizz_buzz", "game_words"),
        "(n: int) -> list[str]",
        _make_fizz_buzz,
        ("build the list with a single loop", "raise `ValueError` for a negative `n`", "avoid string concatenation "
         "inside the loop", "return a new list on every call"),
        ("`n` = 0 gives []", "`n` = 1 gives ['1']", "multiples of both numbers use the combined word",
         "the numbers are written without leading zeros"),
    ),
    _Spec(
        ("to_base", "int_to_base"),
        "(n: int, base: int) -> str",
        _fixed("writes the positive integer `n` in the given `base`, between 2 and 16, using the digits 0-9 and the "
               "lowercase letters a-f", _ex_to_base),
        ("avoid the built-ins `bin`, `oct`, `hex` and `format`", "raise `ValueError` for a base outside 2..16",
         "build the digits by repeated division", "support a negative `n` with a leading '-'"),
        ("0 gives '0'", "base 10 gives the ordinary decimal string", "base 16 uses lowercase letters",
         "1 gives '1' in every base"),
    ),
    _Spec(
        ("gcd_of_list", "common_divisor"),
        "(numbers: list[int]) -> int",
        _fixed("returns the greatest common divisor of all the numbers in `numbers`", _ex_gcd_list),
        ("use Euclid's algorithm", "avoid `math.gcd`", "use the absolute values of negative numbers",
         "stop early once the running result is 1"),
        ("an empty list raises `ValueError`", "a single number gives its absolute value",
         "zeros are ignored unless every number is zero", "a list of zeros gives 0"),
    ),
)  # fmt: skip

REQUIREMENT_WEIGHT = 0.3
EDGE_CASE_WEIGHT = 0.25


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _code_item(rng: Rng, specs: Sequence[_Spec]) -> _Draft:
    """A function spec: lead sentence, then 0-3 extra requirements, 0-3 edge cases, maybe an example call."""
    spec = _pick(rng, specs)
    name = _pick(rng, spec.names)
    core, example = spec.make(rng)
    parts = [_pick(rng, _CODE_LEADS).format(sig=f"def {name}{spec.signature}", core=core)]
    requirements = _sample(rng, spec.requirements, _int(rng, 0, 3))
    edge_cases = _sample(rng, spec.edge_cases, _int(rng, 0, 3))
    if requirements:
        style = _pick(rng, ("It should also {}.", "Requirements: {}.", "In addition, it must {}."))
        parts.append(style.format("; ".join(requirements) if style.startswith("Req") else _join(requirements)))
    if edge_cases:
        style = _pick(rng, ("Edge cases: {}.", "Make sure that {}.", "Handle these cases: {}."))
        parts.append(style.format(_join(edge_cases) if style.startswith("Make") else "; ".join(edge_cases)))
    if example is not None and rng.random() < 0.8:
        arguments, result = example
        parts.append(f"For example, `{name}({arguments})` should return {result}.")
    complexity = spec.offset + REQUIREMENT_WEIGHT * len(requirements) + EDGE_CASE_WEIGHT * len(edge_cases)
    return _Draft(" ".join(parts), "pass", CODE_DISTRACTORS, complexity)


def _with_lead_in(build: Callable[[Rng], _Draft], courses: Sequence[str]) -> Callable[[Rng], _Draft]:
    """Prefix every item of a topic with a framing sentence (subjects whose stems alone repeat too often)."""

    def framed(rng: Rng) -> _Draft:
        lead = _lead_in(rng, courses)
        draft = build(rng)
        return _Draft(f"{lead} {draft.question}", draft.answer, draft.wrong, draft.complexity)

    return framed


def _specs_topic(specs: Sequence[_Spec]) -> Callable[[Rng], _Draft]:
    return lambda rng: _code_item(rng, specs)


# =====================================================================================================================
# Topic tables and the public generator.

GENERAL_TOPICS = (
    Topic("elementary_mathematics", -1.7, _general_elementary_mathematics),
    Topic("high_school_geography", -1.2, _general_high_school_geography),
    Topic("nutrition", -0.8, _general_nutrition),
    Topic("marketing", -0.6, _general_marketing),
    Topic("world_history", -0.4, _general_world_history),
    Topic("high_school_biology", -0.3, _general_high_school_biology),
    Topic("high_school_chemistry", -0.1, _general_high_school_chemistry),
    Topic("clinical_knowledge", 0.1, _general_clinical_knowledge),
    Topic("moral_scenarios", 0.2, _general_moral_scenarios),
    Topic("college_physics", 0.5, _with_lead_in(_general_college_physics, ("physics", "college physics", "mechanics"))),
    Topic("formal_logic", 0.6, _with_lead_in(_general_formal_logic, ("logic", "formal logic", "philosophy"))),
    Topic("econometrics", 0.9, _general_econometrics),
    Topic("professional_law", 1.1, _general_professional_law),
    Topic("abstract_algebra", 1.3, _with_lead_in(_general_abstract_algebra, _ALGEBRA_COURSES)),
)
MATH_TOPICS = (
    Topic("arithmetic", -1.7, _math_arithmetic),
    Topic("percentages", -1.1, _math_percentages),
    Topic("ratios", -0.8, _math_ratios),
    Topic("linear_equations", -0.6, _framed(_math_linear_equations, ("algebra", "pre-algebra"))),
    Topic("sequences", -0.1, _framed(_math_sequences, ("algebra", "sequences and series"))),
    Topic("systems_of_equations", 0.0, _framed(_math_systems, ("algebra", "linear algebra"))),
    Topic("quadratics", 0.3, _framed(_math_quadratics, ("algebra", "precalculus"))),
    Topic("probability", 0.4, _framed(_math_probability, ("probability", "statistics"))),
    Topic("geometry", 0.5, _framed(_math_geometry, ("geometry", "coordinate geometry"))),
    Topic("inequalities", 0.7, _framed(_math_inequalities, ("algebra", "precalculus"))),
    Topic("combinatorics", 0.8, _framed(_math_combinatorics, ("counting", "combinatorics"))),
    Topic("number_theory", 1.0, _framed(_math_number_theory, ("number theory", "olympiad"))),
    Topic("complex_numbers", 1.2, _framed(_math_complex_numbers, ("precalculus", "complex analysis"))),
)
CODE_TOPICS = (
    Topic("string_manipulation", -1.4, _specs_topic(_STRING_SPECS)),
    Topic("list_filtering", -1.2, _specs_topic(_FILTER_SPECS)),
    Topic("number_utilities", -0.9, _specs_topic(_NUMBER_SPECS)),
    Topic("counting_with_dictionaries", -0.7, _specs_topic(_COUNTING_SPECS)),
    Topic("sorting_with_keys", -0.4, _specs_topic(_SORTING_SPECS)),
    Topic("parsing", -0.1, _specs_topic(_PARSING_SPECS)),
    Topic("two_pointers", 0.2, _specs_topic(_TWO_POINTER_SPECS)),
    Topic("recursion", 0.3, _specs_topic(_RECURSION_SPECS)),
    Topic("intervals", 0.6, _specs_topic(_INTERVAL_SPECS)),
    Topic("graph_search", 0.9, _specs_topic(_GRAPH_SPECS)),
    Topic("dynamic_programming", 1.2, _specs_topic(_DP_SPECS)),
)

# (domain, code mixed into the per-item seed, topics, centre subtracted so that b has mean ~0 over the domain)
_DOMAIN_TABLE = (
    ("general", 1, GENERAL_TOPICS, 0.27),
    ("math", 2, MATH_TOPICS, 0.48),
    ("code", 3, CODE_TOPICS, 0.70),
)


def synthetic_topics(domain: str) -> tuple[Topic, ...]:
    """The topics of a synthetic domain with their base difficulties (for reports and the simulator)."""
    return _domain_entry(domain)[2]


def _domain_entry(domain: str) -> tuple[str, int, tuple[Topic, ...], float]:
    for entry in _DOMAIN_TABLE:
        if entry[0] == domain:
            return entry
    raise AgentBalanceError(f"unknown synthetic domain {domain!r}; valid domains: {', '.join(DOMAINS)}")


def _topic_slot(seed: int, code: int, index: int, topic_count: int) -> int:
    """Topics are dealt in shuffled blocks of `topic_count` consecutive items, so any 2,000 items
    carry an almost exact topic mix: the sample's mean difficulty, and with it a backbone's score,
    varies far less from one seed to another than with independent draws."""
    block, slot = divmod(index, topic_count)
    return int(np.random.default_rng([seed, code, 1, block]).permutation(topic_count)[slot])


def _synthetic_item(domain: str, code: int, topics: tuple[Topic, ...], centre: float, seed: int, index: int) -> Query:
    rng = np.random.default_rng([seed, code, index])
    topic = topics[_topic_slot(seed, code, index, len(topics))]
    residual = float(rng.normal(0.0, RESIDUAL_SD))
    draft = topic.build(rng)
    difficulty = round(topic.base + draft.complexity + residual - centre, 4)
    if domain == "general":
        gold_position = int(rng.integers(4))
        others = [p for p in range(4) if p != gold_position]
        others = [others[int(j)] for j in rng.permutation(3)]
        choices = [""] * 4
        choices[gold_position] = draft.answer
        for position, text in zip(others, draft.wrong, strict=True):
            choices[position] = text
        return Query(
            id=f"syn-{domain}-{seed}-{index}",
            question=draft.question,
            choices=tuple(choices),
            answer=LETTERS[gold_position],
            domain=domain,
            metadata={"difficulty": difficulty, "topic": topic.name, "distractors": [LETTERS[p] for p in others]},
        )
    return Query(
        id=f"syn-{domain}-{seed}-{index}",
        question=draft.question,
        answer=draft.answer,
        domain=domain,
        metadata={"difficulty": difficulty, "topic": topic.name, "distractors": list(draft.wrong)},
    )


def generate_synthetic(domain: str, count: int, seed: int, start: int = 0) -> list[Query]:
    """Queries start .. start+count-1 of a synthetic domain; item i depends only on (domain, seed, i).

    Each item has its own generator seeded by (seed, domain code, i), so a slice of a long run equals a short run.
    metadata["difficulty"] = topic base + visible complexity (steps, conditions, number size, EXCEPT/NOT, extra
    requirements and edge cases) + hidden N(0, RESIDUAL_SD) - a per-domain centre, so b has mean ~0 and sd ~1.1-1.2.
    """
    name, code, topics, centre = _domain_entry(domain)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise AgentBalanceError(f"synthetic {domain}: count must be a non-negative integer, got {count!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise AgentBalanceError(f"synthetic {domain}: start must be a non-negative integer, got {start!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AgentBalanceError(f"synthetic {domain}: seed must be a non-negative integer, got {seed!r}")
    return [_synthetic_item(name, code, topics, centre, seed, index) for index in range(start, start + count)]
