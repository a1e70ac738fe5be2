"""The math domain's algebra topics (equations, sequences, systems, quadratics, inequalities, complex numbers):
MATH-like problems with a short exact answer. It must never state a problem whose gold answer it did not compute.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from agentbalance.worlds.simulated.questions.common import (
    PYTHAGOREAN_TRIPLES,
    Draft,
    Rng,
    between,
    linear,
    magnitude,
    names,
    numeric_wrong,
    ordinal,
    pick,
    sample,
    three_wrong,
    two_names,
)


def linear_equations(rng: Rng) -> Draft:
    kind = int(rng.integers(5))
    x = between(rng, -15, 25) or 7
    if kind == 0:
        a, b = between(rng, 2, 12), between(rng, -40, 40) or 5
        c = a * x + b
        question = f"Solve for x: {linear([(a, 'x'), (b, '')])} = {c}."
        wrong = numeric_wrong(x, [Fraction(c + b, a), c - b, -x], positive=False)
        return Draft(question, str(x), wrong, magnitude(a, b, c))
    if kind == 1:
        a, d = sample(rng, range(2, 13), 2)
        b = between(rng, -30, 30)
        e = a * x + b - d * x
        question = f"Find x if {linear([(a, 'x'), (b, '')])} = {linear([(d, 'x'), (e, '')])}."
        wrong = numeric_wrong(x, [Fraction(e - b, a + d), -x, Fraction(e + b, a - d)], positive=False)
        return Draft(question, str(x), wrong, 0.3 + magnitude(a, b, d, e))
    if kind == 2:
        p, r = between(rng, 2, 9), between(rng, 2, 9)
        s = between(rng, -10, 20)
        q = r * s - p * x
        question = f"Solve ({linear([(p, 'x'), (q, '')])})/{r} = {s} for x."
        wrong = numeric_wrong(x, [Fraction(s - q, p), Fraction(s * r + q, p), x + r], positive=False)
        return Draft(question, str(x), wrong, 0.5 + magnitude(q, s * r))
    if kind == 3:
        n = abs(x) + between(rng, 2, 30)
        a, b = between(rng, 2, 9), between(rng, 1, 50)
        c = a * n - b
        name = pick(rng, names())
        question = (
            f"{name} thinks of a number, multiplies it by {a} and then subtracts {b}, getting {c}. "
            f"What number did {name} think of?"
        )
        wrong = numeric_wrong(n, [Fraction(c - b, a), c + b, Fraction(c, a) + b])
        return Draft(question, str(n), wrong, 0.2 + magnitude(c))
    older, younger = two_names(rng)
    m = pick(rng, (2, 3))
    k = between(rng, m + 1, m + 3)
    age = between(rng, 3, 15)
    if (age * (k - m)) % (m - 1):
        age += 1
    years = age * (k - m) // (m - 1)
    question = (
        f"{older} is {k} times as old as {younger}. In {years} years, {older} will be {m} times as old as {younger}. "
        f"How old is {younger} now?"
    )
    return Draft(question, str(age), numeric_wrong(age, [age + years, k * age, age * m]), 0.8)


def sequences(rng: Rng) -> Draft:
    kind = int(rng.integers(5))
    if kind <= 1:
        a, d = between(rng, -20, 50), between(rng, -9, 15) or 4
        n = between(rng, 8, 60)
        shown = ", ".join(str(a + j * d) for j in range(4))
        if kind == 0:
            gold = a + (n - 1) * d
            question = f"What is the {ordinal(n)} term of the arithmetic sequence {shown}, ...?"
            wrong = numeric_wrong(gold, [a + n * d, a + (n - 2) * d, (n - 1) * d], positive=False)
            return Draft(question, str(gold), wrong, magnitude(gold, n))
        gold = n * (2 * a + (n - 1) * d) // 2
        question = f"What is the sum of the first {n} terms of the arithmetic sequence {shown}, ...?"
        candidates = [gold - (a + (n - 1) * d), n * (2 * a + n * d) // 2, a + (n - 1) * d]
        return Draft(question, str(gold), numeric_wrong(gold, candidates, positive=False), 0.4 + magnitude(gold, n))
    if kind <= 3:
        a, r = between(rng, 1, 9), pick(rng, (2, 3, -2, 4, 5, -3))
        n = between(rng, 5, 10)
        shown = ", ".join(str(a * r**j) for j in range(4))
        if kind == 2:
            gold = a * r ** (n - 1)
            question = pick(
                rng,
                (
                    f"Find the {ordinal(n)} term of the geometric sequence {shown}, ....",
                    f"What is the {ordinal(n)} term of the geometric progression that begins {shown}?",
                ),
            )
            wrong = numeric_wrong(gold, [a * r**n, a * r ** (n - 2), a * r * (n - 1)], positive=False)
            return Draft(question, str(gold), wrong, 0.3 + magnitude(gold, weight=0.15))
        gold = a * (r**n - 1) // (r - 1)
        question = f"What is the sum of the first {n} terms of the geometric sequence {shown}, ...?"
        candidates = [a * (r ** (n - 1) - 1) // (r - 1), a * r ** (n - 1), a * (r ** (n + 1) - 1) // (r - 1)]
        return Draft(
            question, str(gold), numeric_wrong(gold, candidates, positive=False), 0.6 + magnitude(gold, weight=0.15)
        )
    start, p, q = between(rng, -5, 9), pick(rng, (2, 3, -2)), between(rng, -5, 5) or 1
    n = between(rng, 4, 7)
    terms = [start]
    for _ in range(n):
        terms.append(p * terms[-1] + q)
    question = (
        f"A sequence is defined by a_1 = {start} and a_(k+1) = {linear([(p, 'a_k'), (q, '')])} for k >= 1. "
        f"What is a_{n}?"
    )
    gold = terms[n - 1]
    wrong = numeric_wrong(gold, [terms[n - 2], terms[n], gold + q], positive=False)
    return Draft(question, str(gold), wrong, 0.4 + magnitude(gold, weight=0.15))


def _solve_2x2(rng: Rng) -> tuple[list[list[int]], int, int]:
    while True:
        m = [[between(rng, 1, 9) * pick(rng, (1, -1)) for _ in range(2)] for _ in range(2)]
        if m[0][0] * m[1][1] - m[0][1] * m[1][0] != 0:
            return m, between(rng, -9, 9), between(rng, -9, 9)


def _det3(m: Sequence[Sequence[int]]) -> int:
    return (
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    )


def systems_of_equations(rng: Rng) -> Draft:
    kind = int(rng.integers(4))
    if kind == 0:
        m, x, y = _solve_2x2(rng)
        eqs = [f"{linear([(m[i][0], 'x'), (m[i][1], 'y')])} = {m[i][0] * x + m[i][1] * y}" for i in range(2)]
        values = {"x": x, "y": y, "x + y": x + y, "x - y": x - y, "xy": x * y}
        asked = pick(rng, tuple(values))
        gold = values[asked]
        candidates = [v for key, v in values.items() if key != asked] + [-gold]
        question = f"If {eqs[0]} and {eqs[1]}, what is the value of {asked}?"
        return Draft(
            question, str(gold), numeric_wrong(gold, candidates, positive=False), 0.2 * (asked not in ("x", "y"))
        )
    if kind == 1:
        adult, child = between(rng, 8, 20), between(rng, 3, 6)
        adults, children = between(rng, 10, 200), between(rng, 10, 200)
        name = pick(rng, names())
        question = (
            f"{name}'s school play sold {adults + children} tickets for a total of "
            f"${adults * adult + children * child}. "
            f"Adult tickets cost ${adult} and child tickets cost ${child}. How many adult tickets were sold?"
        )
        candidates = [children, (adults + children) // 2, (adults * adult + children * child) // adult]
        return Draft(
            question, str(adults), numeric_wrong(adults, candidates), 0.3 + magnitude(adults + children, free=3)
        )
    if kind == 2:
        nickels, dimes = between(rng, 3, 60), between(rng, 3, 60)
        cents = 5 * nickels + 10 * dimes
        name = pick(rng, names())
        question = (
            f"{name} has {nickels + dimes} coins, all nickels (5 cents) and dimes (10 cents), worth "
            f"${cents // 100}.{cents % 100:02d} in total. How many dimes does {name} have?"
        )
        return Draft(question, str(dimes), numeric_wrong(dimes, [nickels, (nickels + dimes) // 2, dimes + 5]), 0.3)
    while True:
        m = [[between(rng, -3, 3) for _ in range(3)] for _ in range(3)]
        if _det3(m) != 0 and all(any(row) for row in m):
            break
    sol = [between(rng, -6, 6) for _ in range(3)]
    rhs = [sum(c * v for c, v in zip(row, sol, strict=True)) for row in m]
    eqs = [
        f"{linear([(row[0], 'x'), (row[1], 'y'), (row[2], 'z')])} = {value}" for row, value in zip(m, rhs, strict=True)
    ]
    asked = int(rng.integers(3))
    gold = sol[asked]
    question = f"Solve the system {eqs[0]}, {eqs[1]}, {eqs[2]}. What is {'xyz'[asked]}?"
    candidates = [sol[(asked + 1) % 3], sol[(asked + 2) % 3], -gold]
    return Draft(question, str(gold), numeric_wrong(gold, candidates, positive=False), 0.8)


def quadratics(rng: Rng) -> Draft:
    kind = int(rng.integers(6))
    if kind <= 1:
        r1, r2 = sorted(sample(rng, [v for v in range(-12, 13) if v], 2))
        a = 1 if kind == 0 else between(rng, 2, 5)
        poly = linear([(a, "x^2"), (-a * (r1 + r2), "x"), (a * r1 * r2, "")])
        if kind == 1:
            gold = r1**2 + r2**2
            question = f"Let r and s be the roots of {poly} = 0. What is r^2 + s^2?"
            candidates = [(r1 + r2) ** 2, (r1 + r2) ** 2 - r1 * r2, abs(r1**2 - r2**2)]
            return Draft(
                question, str(gold), numeric_wrong(gold, candidates, positive=False), 0.6 + magnitude(a * r1 * r2)
            )
        asked = int(rng.integers(3))
        if asked == 0:
            gold, candidates, text = r2, [r1, -r2, -r1], "the larger root"
        elif asked == 1:
            gold, candidates, text = r1 + r2, [-(r1 + r2), r1 * r2, r2 - r1], "the sum of the roots"
        else:
            gold, candidates, text = r1 * r2, [-(r1 * r2), r1 + r2, r1 * r2 + 1], "the product of the roots"
        question = pick(rng, (f"What is {text} of the equation {poly} = 0?", f"Find {text} of {poly} = 0."))
        return Draft(question, str(gold), numeric_wrong(gold, candidates, positive=False), magnitude(r1 * r2))
    if kind == 2:
        b, c = 2 * between(rng, -9, 9) or 4, between(rng, -30, 30)
        gold = c - b * b // 4
        question = f"What is the minimum value of y = {linear([(1, 'x^2'), (b, 'x'), (c, '')])} over all real x?"
        return Draft(question, str(gold), numeric_wrong(gold, [c, c + b * b // 4, -b // 2], positive=False), 0.3)
    if kind == 3:
        n = between(rng, 5, 60)
        question = (
            f"{pick(rng, names())} multiplies two consecutive positive integers and gets {n * (n + 1)}. "
            "What is the larger of the two?"
        )
        return Draft(
            question,
            str(n + 1),
            numeric_wrong(n + 1, [n, n + 2, n * (n + 1) // 2]),
            0.2 + magnitude(n * (n + 1), free=3),
        )
    if kind == 4:
        width, extra = between(rng, 3, 30), between(rng, 2, 15)
        area = width * (width + extra)
        plot = pick(rng, ("garden", "patio", "swimming pool", "vegetable plot", "courtyard"))
        question = (
            f"{pick(rng, names())}'s rectangular {plot} is {extra} m longer than it is wide, and its area is {area} "
            "square metres. How wide is it, in metres?"
        )
        return Draft(question, str(width), numeric_wrong(width, [width + extra, area // extra, width - 1]), 0.5)
    if rng.random() < 0.5:
        while True:
            a, b, c = between(rng, 1, 9) * pick(rng, (1, -1)), between(rng, -20, 20), between(rng, -30, 30)
            if c:
                break
        discriminant = b * b - 4 * a * c
        gold = 2 if discriminant > 0 else 1 if discriminant == 0 else 0
        question = f"How many real solutions does {linear([(a, 'x^2'), (b, 'x'), (c, '')])} = 0 have?"
        return Draft(question, str(gold), numeric_wrong(gold, [(gold + 1) % 3, (gold + 2) % 3, 4], positive=False), 0.3)
    p, q = between(rng, 1, 5), between(rng, 2, 20)
    question = pick(
        rng,
        (
            f"For which positive value of k does {linear([(p * p, 'x^2')])} + kx + {q * q} = 0 have exactly one real "
            "solution?",
            f"For which positive k does the graph of y = {linear([(p * p, 'x^2')])} + kx + {q * q} touch the "
            "x-axis at exactly one point?",
        ),
    )
    gold = 2 * p * q
    return Draft(question, str(gold), numeric_wrong(gold, [p * q, 4 * p * q, q * q]), 0.5 + 0.2 * (p > 1))


def _count_integers(predicate: Callable[[int], bool]) -> int:
    return sum(1 for v in range(-400, 401) if predicate(v))


def inequalities(rng: Rng) -> Draft:
    kind = int(rng.integers(5))
    if kind == 0:
        a, b, c = between(rng, 2, 9), between(rng, 1, 40), between(rng, -20, 80)
        strict = rng.random() < 0.5
        gold = (c + b) // a + 1 if strict else -((-(c + b)) // a)
        sign = ">" if strict else ">="
        question = f"What is the smallest integer x that satisfies {a}x - {b} {sign} {c}?"
        wrong = numeric_wrong(gold, [gold - 1, (c - b) // a + 1, gold + 1], positive=False)
        return Draft(question, str(gold), wrong, 0.2 + magnitude(c + b))
    if kind == 1:
        a, b = between(rng, -20, 20), between(rng, 2, 30)
        strict = rng.random() < 0.5
        gold = 2 * b - 1 if strict else 2 * b + 1
        inner = f"x - {a}" if a >= 0 else f"x + {-a}"
        question = f"How many integers x satisfy |{inner}| {'<' if strict else '<='} {b}?"
        return Draft(question, str(gold), numeric_wrong(gold, [2 * b, 2 * b + 1 if strict else 2 * b - 1, b]), 0.3)
    if kind == 2:
        p, q, r = between(rng, 2, 5), between(rng, -10, 10), between(rng, 3, 30)
        gold = _count_integers(lambda v: abs(p * v + q) <= r)
        question = f"How many integers x satisfy |{linear([(p, 'x'), (q, '')])}| <= {r}?"
        return Draft(question, str(gold), numeric_wrong(gold, [gold + 1, 2 * r + 1, gold - 1]), 0.6)
    if kind == 3:
        lo, hi = sorted(sample(rng, range(-15, 16), 2))
        strict = rng.random() < 0.5
        poly = linear([(1, "x^2"), (-(lo + hi), "x"), (lo * hi, "")])
        gold = hi - lo - 1 if strict else hi - lo + 1
        question = pick(
            rng,
            (
                f"How many integers x satisfy {poly} {'<' if strict else '<='} 0?",
                f"For how many integer values of x is {poly} {'negative' if strict else 'zero or negative'}?",
            ),
        )
        other = hi - lo + 1 if strict else hi - lo - 1
        return Draft(question, str(gold), numeric_wrong(gold, [hi - lo, other, gold + 2]), 0.5)
    a, b = between(rng, -20, 10), between(rng, -9, 9)
    c = a + between(rng, 4, 40)
    gold = _count_integers(lambda v: a < 2 * v + b <= c)
    question = f"How many integers x satisfy {a} < {linear([(2, 'x'), (b, '')])} <= {c}?"
    return Draft(question, str(gold), numeric_wrong(gold, [c - a, gold + 1, gold - 1]), 0.4)


def _cx(re: int, im: int, spaced: bool = False) -> str:
    """a+bi with integer parts: '3+4i', '-2i', '5', 'i'; `spaced` writes '3 + 4i' for question text."""
    if im == 0:
        return str(re)
    imag = "i" if abs(im) == 1 else f"{abs(im)}i"
    if re == 0:
        return imag if im > 0 else f"-{imag}"
    sign = "+" if im > 0 else "-"
    return f"{re} {sign} {imag}" if spaced else f"{re}{sign}{imag}"


def complex_numbers(rng: Rng) -> Draft:
    kind = int(rng.integers(6))

    def nonzero(low: int, high: int) -> int:
        return pick(rng, [v for v in range(low, high + 1) if v])

    if kind == 0:
        a, b, c, d = (nonzero(-9, 9) for _ in range(4))
        re, im = a * c - b * d, a * d + b * c
        question = f"Compute ({_cx(a, b, True)})({_cx(c, d, True)}), where i^2 = -1."
        gold = _cx(re, im)
        wrong = three_wrong(gold, [_cx(a * c + b * d, im), _cx(a * c, b * d), _cx(re, -im)], lambda k: _cx(re + k, im))
        return Draft(question, gold, wrong, magnitude(re, im))
    if kind == 1:
        scale = between(rng, 1, 5)
        a, b, c = (side * scale for side in pick(rng, PYTHAGOREAN_TRIPLES))
        if rng.random() < 0.5:
            a, b = b, a
        a, b = a * pick(rng, (1, -1)), b * pick(rng, (1, -1))
        question = pick(
            rng,
            (
                f"What is the modulus of the complex number {_cx(a, b, True)}?",
                f"Find |z| for z = {_cx(a, b, True)}.",
                f"How far from the origin of the complex plane is the point {_cx(a, b, True)}?",
            ),
        )
        return Draft(
            question, str(c), numeric_wrong(c, [abs(a) + abs(b), c * c, abs(abs(a) - abs(b))]), 0.1 + magnitude(c)
        )
    if kind == 2:
        n = between(rng, 10, 999)
        powers = ("1", "i", "-1", "-i")
        gold = powers[n % 4]
        question = pick(
            rng, (f"Simplify i^{n}, where i^2 = -1.", f"What is the value of i^{n} if i is the imaginary unit?")
        )
        wrong = (powers[(n - 1) % 4], powers[(n + 1) % 4], powers[(n + 2) % 4])
        return Draft(question, gold, wrong, 0.2 + magnitude(n, weight=0.2))
    if kind == 3:
        a, b = nonzero(-6, 6), nonzero(-6, 6)
        c, d = nonzero(-5, 5), nonzero(-5, 5)
        product = (a * c - b * d, a * d + b * c)
        question = f"Compute ({_cx(*product, True)}) / ({_cx(c, d, True)}), where i^2 = -1."
        gold = _cx(a, b)
        wrong = three_wrong(gold, [_cx(a, -b), _cx(b, a), _cx(-a, -b)], lambda k: _cx(a + k, b))
        return Draft(question, gold, wrong, 0.6 + magnitude(*product))
    if kind == 4:
        a, b = nonzero(-12, 12), nonzero(-12, 12)
        gold = a * a + b * b
        question = f"If z = {_cx(a, b, True)} and z* is its complex conjugate, what is z·z*?"
        return Draft(
            question, str(gold), numeric_wrong(gold, [a * a - b * b, 2 * a, (a + b) ** 2], positive=False), 0.1
        )
    a, b = nonzero(-12, 12), between(rng, 1, 12)
    equation = linear([(1, "x^2"), (-2 * a, "x"), (a * a + b * b, "")])
    question = pick(
        rng,
        (
            f"The equation {equation} = 0 has two complex roots. Which root has a positive imaginary part?",
            f"Find the root of {equation} = 0 whose imaginary part is positive.",
        ),
    )
    gold = _cx(a, b)
    wrong = three_wrong(gold, [_cx(-a, b), _cx(a, b * b), _cx(b, a)], lambda k: _cx(a, b + k))
    return Draft(question, gold, wrong, 0.6)
