"""The general domain's worked subjects (elementary maths, physics, logic, econometrics, abstract algebra): MMLU-like
items computed from random numbers. It must never let a wrong option equal the gold one nor two options coincide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from agentbalance.worlds.simulated.questions.banks import (
    AbstractAlgebraBank,
    EconometricsBank,
    FormalLogicBank,
    PhysicsBank,
    load_bank,
)
from agentbalance.worlds.simulated.questions.common import (
    Draft,
    Rng,
    ask_bank,
    between,
    exact,
    magnitude,
    names,
    numeric_wrong,
    pick,
    sample,
    things,
    three_wrong,
    two_names,
    with_lead_in,
)

# Parameters the arithmetic depends on (pairs whose parallel resistance is a whole number of ohms).
_RESISTOR_PAIRS = ((6, 3), (12, 6), (20, 5), (10, 10), (4, 12), (30, 15), (12, 4), (60, 30), (8, 8), (18, 9))
# Notation and answer grids the code indexes by position (not bank data: their order is part of the logic).
_CONNECTIVES = ("•", "∨", "⊃", "≡")
_FORM_NAMES = (
    "valid, by modus ponens",
    "valid, by modus tollens",
    "invalid: it affirms the consequent",
    "invalid: it denies the antecedent",
)
_TRUTH_PAIRS = ("True, True", "True, False", "False, True", "False, False")


def elementary_mathematics(rng: Rng) -> Draft:
    """Word problems of one to three operations; steps and size of the numbers are the visible complexity."""
    name, friend = two_names(rng)
    thing = pick(rng, things())
    kind = int(rng.integers(4))
    if kind == 0:
        boxes, per = between(rng, 3, 14), between(rng, 4, 25)
        gold = boxes * per
        question = (
            f"{name} buys {boxes} boxes of {thing}, and each box holds {per} {thing}. "
            f"How many {thing} does {name} buy in all?"
        )
        candidates, steps = [gold + per, boxes + per, gold - per], 1
    elif kind == 1:
        each, friends = between(rng, 2, 9), between(rng, 2, 8)
        start = each * friends + between(rng, 3, 80)
        gold = start - each * friends
        question = (
            f"{name} has {start} {thing} and gives {each} to each of {friends} friends, starting with {friend}. "
            f"How many {thing} does {name} have left?"
        )
        candidates, steps = [start - each, gold - each, start - each - friends], 2
    elif kind == 2:
        count, price, pen = between(rng, 2, 6), between(rng, 3, 19), between(rng, 2, 9)
        total = count * price + pen
        bill = next(b for b in (20, 50, 100, 200) if b > total)
        gold = bill - total
        question = (
            f"{name} buys {count} notebooks at ${price} each and a pen for ${pen}, paying with a ${bill} bill. "
            f"How much change, in dollars, should {name} get back?"
        )
        candidates, steps = [bill - count * price, bill - price - pen, gold + price], 3
    else:
        den = pick(rng, (2, 3, 4, 5, 6, 8, 10))
        num = pick(rng, [n for n in range(1, den) if math.gcd(n, den) == 1])
        whole = den * between(rng, 3, 40)
        gold = whole * num // den
        question = (
            f"{name} has {whole} {thing} and gives {num}/{den} of them to {friend}. How many {thing} does {friend} get?"
        )
        candidates, steps = [whole // den, whole - gold, gold + num], 1 + (num > 1)
    wrong = numeric_wrong(gold, candidates)
    return Draft(question, str(gold), wrong, 0.4 * (steps - 1) + magnitude(gold, free=2, weight=0.3))


def college_physics(rng: Rng) -> Draft:
    return with_lead_in(rng, load_bank(PhysicsBank).courses, _physics_problem)


def _physics_problem(rng: Rng) -> Draft:
    bank = load_bank(PhysicsBank)
    kind = int(rng.integers(5))
    name = pick(rng, names())
    if kind == 0:
        seconds = between(rng, 1, 7)
        height = 5 * seconds**2
        thing = pick(rng, bank.objects)
        platform = pick(rng, bank.platforms)
        question = (
            f"{name} drops a {thing} from rest from a {platform} {height} m above the ground. Ignoring "
            "air resistance and taking g = 10 m/s^2, how long does it take to reach the ground?"
        )
        candidates = [2 * seconds, Fraction(height, 10), seconds + 1]
        wrong = numeric_wrong(seconds, candidates, fmt=lambda v: f"{exact(v)} s")
        return Draft(question, f"{seconds} s", wrong, 0.3)
    if kind == 1:
        first, second = pick(rng, _RESISTOR_PAIRS)
        parallel = Fraction(first * second, first + second)
        if rng.random() < 0.5:
            question = (
                f"{name} connects resistors of {first} Ω and {second} Ω in parallel. What is their equivalent "
                "resistance?"
            )
            gold, candidates, extra = parallel, [first + second, Fraction(first + second, 2), first * second], 0.0
        else:
            series = between(rng, 2, 20)
            question = (
                f"In {name}'s circuit, a {series} Ω resistor is connected in series with a parallel combination of "
                f"{first} Ω and {second} Ω resistors. What is the equivalent resistance of the whole network?"
            )
            gold = series + parallel
            candidates, extra = [series + first + second, parallel, series + Fraction(first + second, 2)], 0.5
        wrong = numeric_wrong(gold, candidates, fmt=lambda v: f"{exact(v)} Ω")
        return Draft(question, f"{exact(gold)} Ω", wrong, extra)
    if kind == 2:
        mass, speed = between(rng, 2, 40), between(rng, 2, 30)
        gold = Fraction(mass * speed**2, 2)
        question = f"{name} pushes a {mass} kg cart so that it moves at {speed} m/s. What is its kinetic energy?"
        candidates = [mass * speed**2, Fraction(mass * speed, 2), mass * speed]
        wrong = numeric_wrong(gold, candidates, fmt=lambda v: f"{exact(v)} J")
        return Draft(question, f"{exact(gold)} J", wrong, magnitude(gold, free=3))
    if kind == 3:
        moving, resting = between(rng, 1, 9), between(rng, 1, 9)
        speed = (moving + resting) * between(rng, 1, 4)
        gold = Fraction(moving * speed, moving + resting)
        question = (
            f"On {name}'s air track, a {moving} kg glider moving at {speed} m/s collides with a stationary "
            f"{resting} kg glider, and the two stick together. What is their common speed just after the collision?"
        )
        candidates = [Fraction(speed, 2), Fraction(resting * speed, moving + resting), speed]
        wrong = numeric_wrong(gold, candidates, fmt=lambda v: f"{exact(v)} m/s")
        return Draft(question, f"{exact(gold)} m/s", wrong, 0.6)
    t_factor, v_factor = pick(rng, (2, 3, 4)), pick(rng, (2, 3, 4))
    if rng.random() < 0.5:
        volume = "doubled" if v_factor == 2 else f"multiplied by {v_factor}"
        gold, other = Fraction(t_factor, v_factor), Fraction(t_factor * v_factor)
    else:
        volume = "halved" if v_factor == 2 else f"divided by {v_factor}"
        gold, other = Fraction(t_factor * v_factor), Fraction(t_factor, v_factor)
    gas = pick(rng, bank.gases)
    question = (
        f"In {name}'s experiment, the absolute temperature of a sealed sample of {gas}, treated as an "
        f"ideal gas, is multiplied by {t_factor} while its volume is {volume}. By what factor does its pressure change?"
    )
    wrong = numeric_wrong(gold, [other, t_factor, t_factor + v_factor])
    return Draft(question, exact(gold), wrong, 0.5)


def _sentence(text: str) -> str:
    return f"{text[0].upper()}{text[1:]}."


def _random_formula(rng: Rng, letters: Sequence[str]) -> str:
    """A well-formed formula using every letter exactly once, joined by random connectives."""
    parts = [f"~{letter}" if rng.random() < 0.3 else letter for letter in letters]
    while len(parts) > 1:
        at = int(rng.integers(len(parts) - 1))
        parts[at : at + 2] = [f"({parts[at]} {pick(rng, _CONNECTIVES)} {parts[at + 1]})"]
    formula = parts[0]
    return formula[1:-1] if formula.startswith("(") else formula


def formal_logic(rng: Rng) -> Draft:
    return with_lead_in(rng, load_bank(FormalLogicBank).courses, _logic_problem)


def _logic_problem(rng: Rng) -> Draft:
    bank = load_bank(FormalLogicBank)
    name = pick(rng, names())
    atoms = [(atom.positive.format(n=name), atom.negative.format(n=name)) for atom in sample(rng, bank.atoms, 3)]
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
        return Draft(question, gold, wrong, extra)
    if kind == 1:
        form = int(rng.integers(4))
        second, conclusion = ((p, q), (not_q, not_p), (q, p), (not_p, not_q))[form]
        question = (
            f"Consider the argument: 'If {p}, then {q}. {_sentence(second)} Therefore, {conclusion}.' "
            "Which description of this argument is correct?"
        )
        others = {0: (3, 2, 1), 1: (2, 3, 0), 2: (0, 3, 1), 3: (1, 0, 2)}[form]
        wrong = tuple(_FORM_NAMES[j] for j in others)
        return Draft(question, _FORM_NAMES[form], wrong, 0.3 + 0.3 * (form >= 2))
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
        return Draft(question, gold, wrong, 0.4 + 0.2 * (form < 2))
    if kind == 3:
        kind_term = pick(rng, bank.kinds)
        singular, plural, k = kind_term.singular, kind_term.plural, kind_term.letter
        prop = pick(rng, [prop for prop in bank.properties if prop.letter != k])
        prop_s, prop_p, f = prop.singular, prop.plural, prop.letter
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
        return Draft(question, gold, wrong, 0.6 + 0.3 * (form >= 2))
    count = between(rng, 2, 6)
    letters = sample(rng, ("P", "Q", "R", "S", "T", "U", "W"), count)
    formula = _random_formula(rng, letters)
    gold = 2**count
    question = (
        f"How many rows does a complete truth table need for the formula {formula}, "
        f"which contains {count} distinct sentence letters?"
    )
    wrong = numeric_wrong(gold, [2 * count, count**2, 2 ** (count - 1)])
    return Draft(question, str(gold), wrong, 0.15 * count)


def _decimal(value: float, places: int) -> str:
    return f"{value:.{places}f}"


def econometrics(rng: Rng) -> Draft:
    bank = load_bank(EconometricsBank)
    if rng.random() < 1 / 3:
        return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.3)
    return with_lead_in(rng, bank.courses, _econometrics_computation)


def _econometrics_computation(rng: Rng) -> Draft:
    kind = int(rng.integers(4))
    variables = pick(rng, load_bank(EconometricsBank).variables)
    y, x = variables.outcome, variables.regressor
    n = between(rng, 4, 60) * 10
    if kind == 0:
        t = pick(rng, (1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 1.2, 0.8))
        se = pick(rng, (0.05, 0.1, 0.2, 0.25, 0.4, 0.5, 0.02))
        coef = t * se
        question = (
            f"A regression of {y} on {x} with {n} observations gives a slope estimate of {coef:g} with a standard "
            f"error of {se:g}. What is the t-ratio for testing that the true slope is zero?"
        )
        gold = _decimal(t, 2)
        wrong = three_wrong(gold, [_decimal(coef * se, 4), _decimal(se / coef, 2), _decimal(coef - se, 2)],
                             lambda k: _decimal(t + 0.5 * k, 2))  # fmt: skip
        return Draft(question, gold, wrong, 0.1)
    if kind == 1:
        tss = pick(rng, (200, 400, 500, 800, 1000, 1250))
        share = Fraction(between(rng, 2, 18), 20)
        rss = tss * share
        r2 = 1 - share
        if rng.random() < 0.5:
            question = (
                f"In a regression of {y} on {x}, the total sum of squares is {tss} and the residual sum of squares is "
                f"{exact(rss)}. What is the R-squared?"
            )
            gold = _decimal(float(r2), 2)
            candidates = [_decimal(float(share), 2), _decimal(float((tss - rss) / rss), 2), _decimal(float(r2) / 2, 2)]
            return Draft(
                question, gold, three_wrong(gold, candidates, lambda k: _decimal(float(r2) + 0.03 * k, 2)), 0.2
            )
        k = between(rng, 2, 6)
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
        return Draft(question, gold, three_wrong(gold, candidates, lambda j: _decimal(adjusted - 0.004 * j, 3)), 0.7)
    if kind == 2:
        c = between(rng, 1, 9)
        phi = Fraction(pick(rng, (1, 2, 3, 4, 5, 6, 8)), 10) if rng.random() < 0.7 else Fraction(pick(rng, (1, 3)), 4)
        gold = Fraction(c) / (1 - phi)
        question = (
            f"Consider the stationary AR(1) model of {y}, y_t = {c} + {exact(phi)} y_(t-1) + u_t, where u_t is "
            "white noise with zero mean. What is the unconditional mean of y_t?"
        )
        wrong = numeric_wrong(gold, [Fraction(c), c / phi, c * (1 - phi), c / (1 + phi)])
        return Draft(question, exact(gold), wrong, 0.6)
    beta = Fraction(pick(rng, (2, 3, 4, 5, 8, 12, 15)), 10)
    change = pick(rng, (2, 5, 10, 20))
    gold_value = beta * change
    question = (
        f"In the estimated model ln({y}) = a + {exact(beta)} ln({x}), a {change}% increase in {x} is associated "
        f"with approximately what change in {y}?"
    )

    def describe(v: Fraction) -> str:
        return f"an increase of about {exact(v)}%"

    gold = describe(gold_value)
    candidates = [describe(beta), describe(Fraction(change) / beta), f"an increase of about {exact(gold_value)} units"]
    return Draft(question, gold, three_wrong(gold, candidates, lambda j: describe(gold_value + j)), 0.3)


def _cycles_text(rng: Rng, lengths: Sequence[int]) -> str:
    points = [int(v) + 1 for v in rng.permutation(sum(lengths))]
    cycles, at = [], 0
    for length in lengths:
        cycles.append("(" + " ".join(str(v) for v in points[at : at + length]) + ")")
        at += length
    return "".join(cycles)


def abstract_algebra(rng: Rng) -> Draft:
    return with_lead_in(rng, load_bank(AbstractAlgebraBank).courses, _algebra_problem)


def _algebra_problem(rng: Rng) -> Draft:
    bank = load_bank(AbstractAlgebraBank)
    kind = int(rng.integers(6))
    if kind == 0:
        n = between(rng, 6, 60) if rng.random() < 0.7 else between(rng, 61, 400)
        k = between(rng, 2, n - 1)
        gold = n // math.gcd(k, n)
        question = f"What is the order of the element {k} in the additive group Z_{n}?"
        wrong = numeric_wrong(gold, [math.gcd(k, n), n, k, n - k])
        return Draft(question, str(gold), wrong, magnitude(n, free=2, weight=0.3))
    if kind == 1:
        n = between(rng, 8, 90) if rng.random() < 0.7 else between(rng, 91, 600)
        gold = sum(1 for j in range(1, n + 1) if math.gcd(j, n) == 1)
        question = f"How many generators does the cyclic group Z_{n} have?"
        wrong = numeric_wrong(gold, [n - 1, n // 2, gold - 1])
        return Draft(question, str(gold), wrong, 0.2 + magnitude(n, free=2, weight=0.3))
    if kind == 2:
        lengths = sorted((between(rng, 2, 5) for _ in range(between(rng, 2, 3))), reverse=True)
        gold = math.lcm(*lengths)
        group = f"S_{max(sum(lengths), 5)}"
        question = f"What is the order of the permutation {_cycles_text(rng, lengths)} in the symmetric group {group}?"
        wrong = numeric_wrong(gold, [sum(lengths), math.prod(lengths), max(lengths)])
        return Draft(question, str(gold), wrong, 0.2 * len(lengths))
    if kind == 3:
        extension = pick(rng, bank.extensions)
        gold, others = extension.degree, extension.wrong
        a, b = sample(rng, (2, 3, 5, 7, 11, 13), 2)
        field = extension.field.format(a=a, b=b)
        question = f"What is the degree of the field extension {field} over Q?"
        return Draft(question, str(gold), tuple(str(o) for o in others), 0.2 * (gold > 3))
    if kind == 4:
        first_true, second_true = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        first = pick(rng, bank.true_statements if first_true else bank.false_statements)
        second = pick(rng, bank.true_statements if second_true else bank.false_statements)
        while second == first:
            second = pick(rng, bank.true_statements if second_true else bank.false_statements)

        def pair(a: bool, b: bool) -> str:
            return _TRUTH_PAIRS[2 * (not a) + (not b)]

        wrong = (
            pair(not first_true, second_true),
            pair(first_true, not second_true),
            pair(not first_true, not second_true),
        )
        question = f"Statement 1 | {first} Statement 2 | {second} Which assessment of the two statements is correct?"
        return Draft(question, pair(first_true, second_true), wrong, 0.3)
    a, b = between(rng, 2, 30), between(rng, 2, 30)
    gold = math.lcm(a, b)
    question = f"What is the characteristic of the ring Z_{a} × Z_{b}?"
    wrong = numeric_wrong(gold, [a * b, math.gcd(a, b), max(a, b), a + b])
    return Draft(question, str(gold), wrong, 0.3 * (math.gcd(a, b) > 1))
