"""The math domain's counting and measuring topics (arithmetic to number theory) and the framing of math items:
MATH-like problems with a short exact answer. It must never state a problem whose gold answer it did not compute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from agentbalance.worlds.simulated.questions.banks import MathBank, load_bank
from agentbalance.worlds.simulated.questions.common import (
    PYTHAGOREAN_TRIPLES,
    Build,
    Draft,
    Rng,
    articles,
    between,
    exact,
    magnitude,
    names,
    numeric_wrong,
    pick,
    ratio,
    sample,
    things,
    three_wrong,
    two_names,
)

_COLOURS = ("red", "blue", "green")  # in the order the bag's text names them


def framed(build: Build, subjects: Sequence[str]) -> Build:
    """Give a bare exercise a framing sentence (who meets it, in which subject) unless it already names someone."""

    def build_framed(rng: Rng) -> Draft:
        subject = pick(rng, subjects)
        frame = pick(rng, load_bank(MathBank).frames).format(
            name=pick(rng, names()), subject=subject, **articles(subject)
        )
        draft = build(rng)
        if any(name in draft.question for name in names()):
            return draft
        return Draft(f"{frame} {draft.question}", draft.answer, draft.wrong, draft.complexity)

    return build_framed


def arithmetic(rng: Rng) -> Draft:
    """One to three operations on a running count; slips are the partial result, a sign slip, off by one."""
    name, friend = two_names(rng)
    thing = pick(rng, things())
    scale = pick(rng, (10, 25, 100)) if rng.random() < 0.35 else 1
    value = between(rng, 12, 90) * scale
    sentences = [f"{name} has {value} {thing}."]
    history = [value]
    slip = value + 1
    steps = between(rng, 1, 3)
    for _ in range(steps):
        op = int(rng.integers(4))
        divisors = [k for k in range(2, 7) if value % k == 0]
        if op == 1 and value > 6:
            x = between(rng, 2, value - 2)
            sentences.append(
                pick(rng, (f"{name} gives {x} of them to {friend}.", f"{name} loses {x} of them on the way home."))
            )
            slip, value = value + x, value - x
        elif op == 2:
            packs, per = between(rng, 2, 9), between(rng, 3, 12)
            sentences.append(f"{name} then buys {packs} packs with {per} {thing} in each.")
            slip, value = value + packs + per, value + packs * per
        elif op == 3 and divisors:
            k = pick(rng, divisors)
            sentences.append(f"{name} splits them equally into {k} bags and keeps only one bag.")
            slip, value = value - value // k, value // k
        else:
            x = between(rng, 3, 40) * scale
            sentences.append(pick(rng, (f"Then {name} finds {x} more.", f"{friend} gives {name} another {x}.")))
            slip, value = value - x, value + x
        history.append(value)
    sentences.append(f"How many {thing} does {name} have now?")
    wrong = numeric_wrong(value, [history[-2], slip, value + 1, value - 1])
    return Draft(" ".join(sentences), str(value), wrong, 0.45 * (steps - 1) + magnitude(*history, weight=0.3))


def percentages(rng: Rng) -> Draft:
    name = pick(rng, names())
    kind = int(rng.integers(4))
    if kind == 0:
        p = pick(rng, (5, 10, 12, 15, 20, 25, 30, 35, 40, 45, 60, 75, 80, 85))
        unit = 100 // math.gcd(p, 100)
        n = unit * between(rng, max(1, 20 // unit), 2000 // unit)
        gold = Fraction(n * p, 100)
        question = pick(
            rng,
            (
                f"Of the {n} students at {name}'s school, {p}% walk to school. How many students walk to school?",
                f"A theatre has {n} seats, and {p}% of them are sold for {name}'s concert. How many seats are sold?",
                f"{name} reads {p}% of a {n}-page novel on a train journey. How many pages does {name} read?",
            ),
        )
        return Draft(
            question,
            exact(gold),
            numeric_wrong(gold, [n - gold, Fraction(n * p, 10), gold + p]),
            magnitude(n, free=3),
        )
    good = pick(rng, load_bank(MathBank).goods)
    if kind == 1:
        price = 20 * between(rng, 2, 60)
        a, b = pick(rng, (10, 20, 25, 30, 40, 50)), pick(rng, (10, 20, 25, 30, 40, 50))
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
        return Draft(question, exact(gold), numeric_wrong(gold, candidates), 0.5 + magnitude(price, free=3))
    if kind == 2:
        before = 20 * between(rng, 1, 300)
        p = pick(rng, (5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 120, 150))
        after = before * (100 + p) // 100
        place = pick(rng, load_bank(MathBank).places)
        question = (
            f"The population of a {place} grew from {before} to {after} in ten years. By what percentage did it grow?"
        )
        candidates = [Fraction(100 * (after - before), after), after - before, p + 10]
        return Draft(question, str(p), numeric_wrong(p, candidates), 0.3 + magnitude(after, free=3))
    before = 20 * between(rng, 2, 60)
    p = pick(rng, (10, 20, 25, 50, 30, 40))
    after = before * (100 + p) // 100
    question = (
        f"After a {p}% price rise, {name}'s favourite {good} costs ${after}. "
        "What did it cost before the rise, in dollars?"
    )
    candidates = [Fraction(after * (100 - p), 100), after - p, before + 10]
    return Draft(question, str(before), numeric_wrong(before, candidates), 0.7 + magnitude(after, free=3))


def ratios(rng: Rng) -> Draft:
    first, second = two_names(rng)
    kind = int(rng.integers(5))
    if kind == 0:
        a, b = sample(rng, (1, 2, 3, 4, 5, 6, 7, 8, 9), 2)
        k = between(rng, 2, 60) * pick(rng, (1, 1, 10))
        total = (a + b) * k
        question = f"{first} and {second} share ${total} in the ratio {a}:{b}. How many dollars does {second} receive?"
        gold = b * k
        return Draft(
            question,
            str(gold),
            numeric_wrong(gold, [a * k, Fraction(total, b), Fraction(total, 2)]),
            magnitude(total, free=3),
        )
    if kind == 1:
        third = pick(rng, [n for n in names() if n not in (first, second)])
        parts = sample(rng, (1, 2, 3, 4, 5, 6, 7), 3)
        k = between(rng, 2, 40) * pick(rng, (1, 10))
        total = sum(parts) * k
        asked = int(rng.integers(3))
        who = (first, second, third)[asked]
        question = (
            f"{first}, {second} and {third} split {total} stamps in the ratio {parts[0]}:{parts[1]}:{parts[2]}. "
            f"How many stamps does {who} get?"
        )
        gold = parts[asked] * k
        candidates = [parts[(asked + 1) % 3] * k, Fraction(total, 3), Fraction(total * parts[asked], sum(parts) - 1)]
        return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.4 + magnitude(total, free=3))
    if kind == 2:
        serves = pick(rng, (2, 3, 4, 6, 8))
        target = pick(rng, [t for t in (3, 5, 6, 9, 10, 12, 15, 18, 20, 24) if t != serves])
        grams = serves * between(rng, 10, 90)
        ingredient = pick(rng, load_bank(MathBank).ingredients)
        gold = Fraction(grams * target, serves)
        question = (
            f"{first}'s recipe for {serves} people uses {grams} g of {ingredient}. How many grams of {ingredient} are "
            f"needed to cook the same recipe for {target} people?"
        )
        candidates = [Fraction(grams * serves, target), grams + target - serves, grams * target]
        return Draft(question, exact(gold), numeric_wrong(gold, candidates), 0.2 + magnitude(gold, free=3))
    if kind == 3:
        bottles, minutes = between(rng, 2, 40) * 5, pick(rng, (2, 3, 4, 5, 6, 8, 10, 12))
        times = between(rng, 2, 15)
        question = (
            f"A machine in {first}'s workshop fills {bottles} bottles in {minutes} minutes. At the same rate, how many "
            f"minutes does it take to fill {bottles * times} bottles?"
        )
        gold = minutes * times
        return Draft(
            question,
            str(gold),
            numeric_wrong(gold, [minutes + times, gold + minutes, bottles * times // minutes]),
            0.1,
        )
    minutes = pick(rng, (10, 12, 15, 20, 30, 40, 45, 90))
    distance = minutes // math.gcd(minutes, 60) * between(rng, 1, 40)
    speed = Fraction(distance * 60, minutes)
    question = f"{first} drives {distance} km in {minutes} minutes. What is the average speed in kilometres per hour?"
    candidates = [Fraction(distance, minutes), Fraction(distance * minutes, 60), speed / 2]
    return Draft(question, exact(speed), numeric_wrong(speed, candidates), 0.4)


def probability(rng: Rng) -> Draft:
    name = pick(rng, names())
    kind = int(rng.integers(5))
    if kind <= 1:
        counts = [between(rng, 2, 12) for _ in range(3)]
        total = sum(counts)
        which = int(rng.integers(3))
        colour, c = _COLOURS[which], counts[which]
        bag = f"A bag holds {counts[0]} red, {counts[1]} blue and {counts[2]} green marbles."
        if kind == 0:
            gold = Fraction(c, total)
            question = f"{bag} {name} draws one marble at random. What is the probability that it is {colour}?"
            candidates = [Fraction(c, total - c), Fraction(1, 3), Fraction(c + 1, total)]
            return Draft(question, ratio(gold), numeric_wrong(gold, candidates, fmt=ratio), 0.0)
        gold = Fraction(c * (c - 1), total * (total - 1))
        question = (
            f"{bag} {name} draws two marbles at random without replacement. What is the probability that both are "
            f"{colour}?"
        )
        candidates = [Fraction(c * c, total * total), Fraction(c * (c - 1), total * total), Fraction(c, total)]
        return Draft(question, ratio(gold), numeric_wrong(gold, candidates, fmt=ratio), 0.5)
    if kind == 2:
        s = between(rng, 2, 12)
        ways = 6 - abs(s - 7)
        gold = Fraction(ways, 36)
        question = f"{name} rolls two fair six-sided dice. What is the probability that the two numbers add up to {s}?"
        candidates = [Fraction(1, 11), Fraction(ways + 1, 36), Fraction(ways, 12)]
        return Draft(question, ratio(gold), numeric_wrong(gold, candidates, fmt=ratio), 0.2)
    if kind == 3:
        n = between(rng, 2, 5)
        gold = 1 - Fraction(5, 6) ** n
        face = pick(rng, ("one", "two", "three", "four", "five", "six"))
        question = (
            f"{name} rolls a fair six-sided die {n} times. What is the probability of rolling at least one {face}?"
        )
        candidates = [Fraction(n, 6), Fraction(5, 6) ** n, 1 - Fraction(1, 6) ** n]
        return Draft(question, ratio(gold), numeric_wrong(gold, candidates, fmt=ratio), 0.5 + 0.1 * n)
    n = between(rng, 3, 10)
    k = between(rng, 1, n - 1)
    gold = Fraction(math.comb(n, k), 2**n)
    question = f"{name} tosses a fair coin {n} times. What is the probability of getting exactly {k} heads?"
    candidates = [Fraction(k, n), Fraction(1, 2**n), Fraction(math.comb(n, k), 2 ** (n + 1))]
    return Draft(question, ratio(gold), numeric_wrong(gold, candidates, fmt=ratio), 0.4 + 0.05 * n)


def _pi(k: int | Fraction) -> str:
    return "π" if k == 1 else f"{exact(k)}π"


def geometry(rng: Rng) -> Draft:
    kind = int(rng.integers(6))
    if kind == 0:
        scale = between(rng, 1, 6)
        a, b, c = (side * scale for side in pick(rng, PYTHAGOREAN_TRIPLES))
        name = pick(rng, names())
        if rng.random() < 0.5:
            question = pick(
                rng,
                (
                    f"A right triangle drawn by {name} has legs of length {a} and {b}. How long is its hypotenuse?",
                    f"{name} walks {a} m east and then {b} m north. How far, in metres, is {name} from the start?",
                    f"The foot of {name}'s ladder stands {a} m from a wall and its top touches the wall {b} m above "
                    "the ground. How long is the ladder, in metres?",
                ),
            )
            return Draft(question, str(c), numeric_wrong(c, [a + b, c + 1, a * b // 2]), magnitude(c))
        question = (
            f"{name} sketches a right triangle with a hypotenuse of length {c} and one leg of length {a}. "
            "How long is the other leg?"
        )
        return Draft(question, str(b), numeric_wrong(b, [c - a, b + 1, c + a]), 0.3 + magnitude(c))
    if kind == 1:
        r = between(rng, 2, 20)
        given = f"radius {r} m" if rng.random() < 0.5 else f"diameter {2 * r} m"
        shape = f"{pick(rng, names())}'s circular {pick(rng, ('pond', 'table', 'rug', 'flower bed', 'clock face'))}"
        if rng.random() < 0.5:
            question = f"{shape} has a {given}. What is its area? Give the answer in terms of π."
            gold = _pi(r * r)
            wrong = three_wrong(gold, [_pi(2 * r), _pi(4 * r * r), _pi(r)], lambda k: _pi(r * r + k))
        else:
            question = f"{shape} has a {given}. What is its circumference? Give the answer in terms of π."
            gold = _pi(2 * r)
            wrong = three_wrong(gold, [_pi(r * r), _pi(r), _pi(4 * r)], lambda k: _pi(2 * r + k))
        return Draft(question, gold, wrong, 0.3 * given.startswith("diameter"))
    if kind == 2:
        asked = int(rng.integers(3))
        drawer = pick(rng, names())
        if asked == 0:
            n = between(rng, 5, 20)
            gold = (n - 2) * 180
            question = (
                f"{drawer} draws a convex polygon with {n} sides. What is the sum of its interior angles, in degrees?"
            )
            candidates = [n * 180, (n - 1) * 180, (n - 3) * 180]
            extra = 0.1
        elif asked == 1:
            n = pick(rng, (5, 6, 8, 9, 10, 12, 15, 18, 20, 24, 30, 36))
            gold = 180 - 360 // n
            question = (
                f"{drawer} designs a tile shaped like a regular polygon with {n} sides. "
                "What is the measure, in degrees, of each interior angle?"
            )
            candidates = [360 // n, 180 - 180 // n, (n - 2) * 180]
            extra = 0.3
        else:
            n = between(rng, 5, 30)
            gold = n * (n - 3) // 2
            question = (
                f"{drawer} draws every diagonal of a convex polygon with {n} sides. How many diagonals are there?"
            )
            candidates = [n * (n - 1) // 2, n * (n - 3), n * (n - 2) // 2]
            extra = 0.4
        return Draft(question, str(gold), numeric_wrong(gold, candidates), extra)
    if kind == 3:
        scale = between(rng, 1, 3)
        dx, dy, c = (side * scale for side in pick(rng, PYTHAGOREAN_TRIPLES[:4]))
        x1, y1 = between(rng, -10, 10), between(rng, -10, 10)
        x2, y2 = x1 + dx * pick(rng, (1, -1)), y1 + dy * pick(rng, (1, -1))
        question = f"What is the distance between the points ({x1}, {y1}) and ({x2}, {y2})?"
        return Draft(question, str(c), numeric_wrong(c, [dx + dy, c * c, abs(dx - dy)]), 0.3)
    if kind == 4:
        while True:
            pts = [(between(rng, -9, 9), between(rng, -9, 9)) for _ in range(3)]
            cross = (pts[1][0] - pts[0][0]) * (pts[2][1] - pts[0][1]) - (pts[2][0] - pts[0][0]) * (
                pts[1][1] - pts[0][1]
            )
            if cross:
                break
        gold = Fraction(abs(cross), 2)
        shown = ", ".join(f"({x}, {y})" for x, y in pts)
        question = f"What is the area of the triangle with vertices {shown}?"
        return Draft(question, exact(gold), numeric_wrong(gold, [abs(cross), gold / 2, gold + 1]), 0.6)
    a, b = between(rng, 2, 40), between(rng, 2, 40)
    perimeter = 2 * (a + b)
    question = (
        f"A rectangle has a perimeter of {perimeter} cm and one side of length {a} cm. "
        "What is its area in square centimetres?"
    )
    return Draft(
        question, str(a * b), numeric_wrong(a * b, [a * (perimeter // 2), 2 * a * b, a * (perimeter - a)]), 0.3
    )


def combinatorics(rng: Rng) -> Draft:
    kind = int(rng.integers(6))
    name = pick(rng, names())
    if kind == 0:
        word = pick(rng, load_bank(MathBank).words)
        counts = [word.count(ch) for ch in sorted(set(word))]
        gold = math.factorial(len(word)) // math.prod(math.factorial(c) for c in counts)
        question = pick(
            rng,
            (
                f"{name} writes the word {word} on a card. How many distinct arrangements of its letters are there?",
                f"{name} rearranges the letter tiles of the word {word}. How many distinct strings can {name} make?",
                f"In how many distinct orders can {name} write the letters of {word}?",
            ),
        )
        candidates = [math.factorial(len(word)), math.factorial(len(word)) // math.factorial(max(counts)), gold * 2]
        return Draft(
            question,
            str(gold),
            numeric_wrong(gold, candidates),
            0.3 * (len(counts) < len(word)) + magnitude(gold, weight=0.15),
        )
    if kind == 1:
        n, k = between(rng, 6, 25), between(rng, 2, 6)
        gold = math.comb(n, k)
        question = f"In how many ways can a club of {n} members, including {name}, choose a committee of {k}?"
        return Draft(
            question,
            str(gold),
            numeric_wrong(gold, [math.perm(n, k), math.comb(n, k - 1), n * k]),
            magnitude(gold, weight=0.15),
        )
    if kind == 2:
        men, women, k = between(rng, 4, 10), between(rng, 3, 8), between(rng, 3, 5)
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
        return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.6 + magnitude(gold, weight=0.15))
    if kind == 3:
        right, up = between(rng, 2, 8), between(rng, 2, 8)
        gold = math.comb(right + up, right)
        question = (
            f"{name} walks along grid lines from (0, 0) to ({right}, {up}), each step going one unit right or one "
            "unit up. How many different routes are there?"
        )
        return Draft(
            question,
            str(gold),
            numeric_wrong(gold, [right * up, 2 ** (right + up), right + up]),
            0.3 + magnitude(gold, weight=0.15),
        )
    if kind == 4:
        n = between(rng, 4, 9)
        gold = math.factorial(n - 1)
        seat = pick(rng, ("round table", "campfire", "circular bench"))
        question = (
            f"In how many ways can {n} people, {name} among them, sit around a {seat} if only their order around the "
            "circle matters?"
        )
        candidates = [math.factorial(n), math.factorial(n - 1) // 2, math.factorial(n) // 2]
        return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.4)
    digits = sorted(sample(rng, range(1, 10), between(rng, 4, 8)))
    length = between(rng, 2, min(5, len(digits)))
    gold = math.perm(len(digits), length)
    shown = ", ".join(str(d) for d in digits)
    question = f"How many {length}-digit numbers can be formed from the digits {shown} if no digit may be repeated?"
    candidates = [len(digits) ** length, math.comb(len(digits), length), math.perm(len(digits), length - 1)]
    return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.3)


def number_theory(rng: Rng) -> Draft:
    kind = int(rng.integers(6))
    if kind == 0:
        g = between(rng, 2, 30)
        a1, b1 = sample(rng, (2, 3, 4, 5, 7, 9, 11, 13, 16, 17), 2)
        while math.gcd(a1, b1) != 1:
            b1 += 1
        a, b = g * a1, g * b1
        if rng.random() < 0.5:
            question = f"What is the greatest common divisor of {a} and {b}?"
            return Draft(question, str(g), numeric_wrong(g, [2 * g, g // 2, math.lcm(a, b)]), magnitude(a, b))
        gold = math.lcm(a, b)
        question = f"What is the least common multiple of {a} and {b}?"
        return Draft(question, str(gold), numeric_wrong(gold, [a * b, g, gold // 2]), 0.1 + magnitude(a, b))
    if kind == 1:
        a, k, m = between(rng, 2, 12), between(rng, 20, 500), between(rng, 5, 17)
        gold = pow(a, k, m)
        question = f"What is the remainder when {a}^{k} is divided by {m}?"
        wrong = numeric_wrong(gold, [(a * k) % m, pow(a, k % m, m), (gold + 1) % m], positive=False)
        return Draft(question, str(gold), wrong, 0.4 + magnitude(k, free=2, weight=0.2))
    if kind == 2:
        primes = (2, 3, 5, 7, 11, 13)
        while True:
            exps = [
                between(rng, 0, 5),
                between(rng, 0, 3),
                between(rng, 0, 2),
                between(rng, 0, 1),
                between(rng, 0, 1),
                between(rng, 0, 1),
            ]
            n = math.prod(p**e for p, e in zip(primes, exps, strict=True))
            if 12 <= n <= 100000:
                break
        if rng.random() < 0.3:
            gold = math.prod((p ** (e + 1) - 1) // (p - 1) for p, e in zip(primes, exps, strict=True))
            question = f"What is the sum of all positive divisors of {n}?"
            candidates = [gold - n, 2 * n, gold + 1]
            return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.6 + magnitude(n, weight=0.15))
        gold = math.prod(e + 1 for e in exps)
        question = pick(rng, (f"How many positive divisors does {n} have?", f"How many positive integers divide {n}?"))
        candidates = [sum(exps) + 1, math.prod(e for e in exps if e), gold + 1]
        return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.3 + magnitude(n, weight=0.15))
    if kind == 3:
        a, n = between(rng, 2, 99), between(rng, 10, 2000)
        gold = pow(a, n, 10)
        question = f"What is the units digit of {a}^{n}?"
        wrong = numeric_wrong(gold, [(a % 10 * n) % 10, pow(a, n - 1, 10), a % 10], positive=False)
        return Draft(question, str(gold), wrong, 0.3 + magnitude(n, weight=0.15))
    if kind == 4:
        m1, m2 = sample(rng, (3, 4, 5, 7, 8, 9, 11, 13), 2)
        while math.gcd(m1, m2) != 1:
            m2 += 1
        r1, r2 = between(rng, 1, m1 - 1), between(rng, 1, m2 - 1)
        gold = next(v for v in range(1, m1 * m2 + 1) if v % m1 == r1 and v % m2 == r2)
        question = (
            f"What is the smallest positive integer that leaves a remainder of {r1} when divided by {m1} and a "
            f"remainder of {r2} when divided by {m2}?"
        )
        return Draft(question, str(gold), numeric_wrong(gold, [gold + m1 * m2, m1 * m2 + r1, gold + m1]), 0.6)
    low = between(rng, 1, 150)
    high = low + between(rng, 15, 120)
    gold = sum(1 for v in range(max(low + 1, 2), high) if all(v % d for d in range(2, math.isqrt(v) + 1)))
    question = f"How many prime numbers are greater than {low} and less than {high}?"
    candidates = [gold + 1, gold - 1, round((high - low) / math.log(high))]
    return Draft(question, str(gold), numeric_wrong(gold, candidates), 0.2 + magnitude(high, weight=0.2))
