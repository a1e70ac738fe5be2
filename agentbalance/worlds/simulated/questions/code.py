"""The code domain: HumanEval-like function specs from banks/code.yaml, with example calls computed here.

It must never give an example whose result it did not compute here: the bank holds wording, never results.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from agentbalance.errors import AgentBalanceError
from agentbalance.worlds.simulated.questions.banks import CodeBank, CodeTopics, FunctionSpec, bank_path, load_bank
from agentbalance.worlds.simulated.questions.common import Build, Draft, Rng, between, names, pick, sample

CODE_DISTRACTORS = ("fail-edge-case", "fail-logic", "fail-syntax")
"""The wrong "answers" of a code item: how a wrong solution behaves (the right one: `pass`)."""
REQUIREMENT_WEIGHT = 0.3
EDGE_CASE_WEIGHT = 0.25

Example = tuple[str, str] | None
"""(call arguments, expected result already formatted for the text), or None when the spec gives no example."""


@dataclass(frozen=True)
class _Spec:
    names: tuple[str, ...]
    signature: str
    make: Callable[[Rng], tuple[str, Example]]  # -> (what the function does, example)
    requirements: tuple[str, ...]
    edge_cases: tuple[str, ...]
    offset: float = 0.0


def _code(value: object) -> str:
    return f"`{value!r}`"


def _words(rng: Rng, low: int, high: int) -> list[str]:
    return sample(rng, load_bank(CodeBank).example_words, between(rng, low, high))


def _ints(rng: Rng, count: int, low: int, high: int) -> list[int]:
    return [between(rng, low, high) for _ in range(count)]


def _fixed(core: str, example: Callable[[Rng], Example]) -> Callable[[Rng], tuple[str, Example]]:
    """A spec whose wording is fixed and whose example is drawn at random."""
    return lambda rng: (core, example(rng))


def _ex_reverse_words(rng: Rng) -> Example:
    words = _words(rng, 3, 5)
    return repr(" ".join(words)), _code(" ".join(reversed(words)))


def _ex_count_vowels(rng: Rng) -> Example:
    text = " ".join(_words(rng, 1, 3))
    return repr(text), _code(sum(ch in "aeiou" for ch in text))


def _ex_palindrome(rng: Rng) -> Example:
    bank = load_bank(CodeBank)
    word = pick(rng, bank.palindromes) if rng.random() < 0.5 else pick(rng, bank.example_words)
    return repr(word), _code(word == word[::-1])


def _ex_caesar(rng: Rng) -> Example:
    word, k = pick(rng, load_bank(CodeBank).example_words), between(rng, 1, 5)
    shifted = "".join(chr((ord(ch) - 97 + k) % 26 + 97) for ch in word)
    return f"{word!r}, {k}", _code(shifted)


def _ex_keep_even(rng: Rng) -> Example:
    numbers = _ints(rng, between(rng, 5, 8), 1, 50)
    return repr(numbers), _code([v for v in numbers if v % 2 == 0])


def _ex_long_words(rng: Rng) -> Example:
    words, k = _words(rng, 4, 6), between(rng, 3, 5)
    return f"{words!r}, {k}", _code([w for w in words if len(w) > k])


def _ex_in_range(rng: Rng) -> Example:
    values = _ints(rng, between(rng, 5, 8), -20, 40)
    low = between(rng, -10, 10)
    high = low + between(rng, 5, 25)
    return f"{values!r}, {low}, {high}", _code([v for v in values if low <= v <= high])


def _ex_divisible(rng: Rng) -> Example:
    numbers = sample(rng, range(1, 61), 8)
    k, m = between(rng, 2, 5), between(rng, 6, 10)
    return f"{numbers!r}, {k}, {m}", _code([v for v in numbers if v % k == 0 and v % m])


def _ex_word_counts(rng: Rng) -> Example:
    vocabulary = _words(rng, 2, 3)
    text = [pick(rng, vocabulary) for _ in range(between(rng, 4, 7))]
    counts: dict[str, int] = {}
    for word in text:
        counts[word] = counts.get(word, 0) + 1
    return repr(" ".join(text)), _code(counts)


def _ex_char_histogram(rng: Rng) -> Example:
    word = pick(rng, load_bank(CodeBank).example_words)
    counts: dict[str, int] = {}
    for ch in word:
        counts[ch] = counts.get(ch, 0) + 1
    return repr(word), _code(counts)


def _ex_most_common(rng: Rng) -> Example:
    first, second, third = _words(rng, 3, 3)
    items = [first] * 3 + [second] * 2 + [third]
    items = [items[int(j)] for j in rng.permutation(len(items))]
    return repr(items), _code(first)


def _ex_group_by_initial(rng: Rng) -> Example:
    words = _words(rng, 4, 6)
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word)
    return repr(words), _code(groups)


def _ex_inventory(rng: Rng) -> Example:
    products = sample(rng, ("bolts", "nuts", "screws", "washers", "hinges", "nails"), 3)
    records = [(pick(rng, products), between(rng, 1, 9)) for _ in range(between(rng, 4, 6))]
    totals: dict[str, int] = {}
    for name, quantity in records:
        totals[name] = totals.get(name, 0) + quantity
    return repr(records), _code(totals)


def _ex_sort_by_length(rng: Rng) -> Example:
    words = _words(rng, 4, 6)
    return repr(words), _code(sorted(words, key=lambda w: (len(w), w)))


def _ex_sort_people(rng: Rng) -> Example:
    people = [(name, between(rng, 10, 70)) for name in sample(rng, names(), between(rng, 3, 5))]
    return repr(people), _code(sorted(people, key=lambda p: (-p[1], p[0])))


def _ex_top_k(rng: Rng) -> Example:
    people = sample(rng, names(), between(rng, 4, 6))
    scores = dict(zip(people, sample(rng, range(10, 100), len(people)), strict=True))
    k = between(rng, 1, 3)
    return f"{scores!r}, {k}", _code(sorted(scores, key=lambda n: -scores[n])[:k])


def _ex_sort_by_last(rng: Rng) -> Example:
    words = _words(rng, 4, 6)
    return repr(words), _code(sorted(words, key=lambda w: w[-1]))


def _ex_parse_pairs(rng: Rng) -> Example:
    keys = sample(rng, ("host", "port", "user", "mode", "retries", "timeout", "colour", "region"), between(rng, 2, 4))
    pairs = {key: str(between(rng, 1, 99)) for key in keys}
    return repr(";".join(f"{k}={v}" for k, v in pairs.items())), _code(pairs)


def _ex_to_minutes(rng: Rng) -> Example:
    hours, minutes = between(rng, 0, 23), between(rng, 0, 59)
    return repr(f"{hours:02d}:{minutes:02d}"), _code(60 * hours + minutes)


def _ex_parse_version(rng: Rng) -> Example:
    parts = _ints(rng, between(rng, 2, 4), 0, 20)
    return repr(".".join(map(str, parts))), _code(tuple(parts))


def _ex_evaluate_sum(rng: Rng) -> Example:
    numbers = _ints(rng, between(rng, 3, 5), 1, 60)
    text, total = str(numbers[0]), numbers[0]
    for value in numbers[1:]:
        if rng.random() < 0.5:
            text, total = f"{text}+{value}", total + value
        else:
            text, total = f"{text}-{value}", total - value
    return repr(text), _code(total)


def _ex_pair_with_sum(rng: Rng) -> Example:
    for _ in range(20):
        numbers = sorted(sample(rng, range(-10, 40), between(rng, 5, 8)))
        i, j = sorted(sample(rng, range(len(numbers)), 2))
        target = numbers[i] + numbers[j]
        pairs = [
            (a, b) for a in range(len(numbers)) for b in range(a + 1, len(numbers)) if numbers[a] + numbers[b] == target
        ]
        if len(pairs) == 1:
            return f"{numbers!r}, {target}", _code((i, j))
    return None


def _ex_dedupe_sorted(rng: Rng) -> Example:
    numbers = sorted(_ints(rng, between(rng, 6, 9), 0, 8))
    return repr(numbers), _code(len(set(numbers)))


def _ex_merge_sorted(rng: Rng) -> Example:
    a, b = sorted(_ints(rng, between(rng, 2, 5), 0, 30)), sorted(_ints(rng, between(rng, 2, 5), 0, 30))
    return f"{a!r}, {b!r}", _code(sorted(a + b))


def _ex_longest_unique(rng: Rng) -> Example:
    s = "".join(pick(rng, "abcdef") for _ in range(between(rng, 7, 11)))
    best = max(j - i for i in range(len(s)) for j in range(i + 1, len(s) + 1) if len(set(s[i:j])) == j - i)
    return repr(s), _code(best)


def _ex_flatten(rng: Rng) -> Example:
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


def _ex_power_set(rng: Rng) -> Example:
    items = sample(rng, range(1, 20), between(rng, 2, 4))
    return repr(items), f"a list of {2 ** len(items)} subsets"


def _ex_permutations(rng: Rng) -> Example:
    letters = "".join(sample(rng, "abcdefgh", between(rng, 3, 4)))
    return repr(letters), f"a list of {math.factorial(len(letters))} strings"


def _ex_hanoi(rng: Rng) -> Example:
    n = between(rng, 2, 6)
    return str(n), f"a list of {2**n - 1} moves"


def _random_intervals(rng: Rng, count: int) -> list[tuple[int, int]]:
    """Randomly paired distinct endpoints: intervals overlap often, but never merely touch."""
    ends = sample(rng, range(0, 40), 2 * count)
    return [(min(ends[2 * j : 2 * j + 2]), max(ends[2 * j : 2 * j + 2])) for j in range(count)]


def _merge(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _ex_merge_intervals(rng: Rng) -> Example:
    intervals = _random_intervals(rng, between(rng, 3, 5))
    return repr(intervals), _code(_merge(intervals))


def _ex_insert_interval(rng: Rng) -> Example:
    base = _merge(_random_intervals(rng, between(rng, 3, 4)))
    used = {v for interval in base for v in interval}
    low, high = sorted(sample(rng, [v for v in range(0, 40) if v not in used], 2))
    new = (low, high)
    return f"{base!r}, {new!r}", _code(_merge([*base, new]))


def _ex_meeting_rooms(rng: Rng) -> Example:
    meetings = _random_intervals(rng, between(rng, 3, 5))
    events = sorted([(s, 1) for s, _ in meetings] + [(e, -1) for _, e in meetings], key=lambda t: (t[0], t[1]))
    rooms = best = 0
    for _, delta in events:
        rooms += delta
        best = max(best, rooms)
    return repr(meetings), _code(best)


def _ex_covered_length(rng: Rng) -> Example:
    intervals = _random_intervals(rng, between(rng, 2, 4))
    return repr(intervals), _code(sum(e - s for s, e in _merge(intervals)))


def _ex_free_slots(rng: Rng) -> Example:
    busy = _merge(_random_intervals(rng, between(rng, 2, 3)))
    day_start, day_end = min(s for s, _ in busy) - between(rng, 1, 5), max(e for _, e in busy) + between(rng, 1, 5)
    gaps, cursor = [], day_start
    for start, end in busy:
        if start > cursor:
            gaps.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < day_end:
        gaps.append((cursor, day_end))
    return f"{busy!r}, {day_start}, {day_end}", _code(gaps)


def _ex_components(rng: Rng) -> Example:
    n = between(rng, 4, 9)
    edges = [tuple(sorted(sample(rng, range(n), 2))) for _ in range(between(rng, 1, n - 1))]
    parent = list(range(n))

    def find(v: int) -> int:
        while parent[v] != v:
            v = parent[v]
        return v

    for a, b in edges:
        parent[find(a)] = find(b)
    return f"{n}, {edges!r}", _code(len({find(v) for v in range(n)}))


def _ex_has_cycle(rng: Rng) -> Example:
    nodes = list("abcde"[: between(rng, 3, 5)])
    graph = {node: [other for other in nodes[i + 1 :] if rng.random() < 0.4] for i, node in enumerate(nodes)}
    cyclic = rng.random() < 0.5
    if cyclic:
        graph[nodes[-1]].append(nodes[0])
        for i in range(len(nodes) - 1):
            if nodes[i + 1] not in graph[nodes[i]]:
                graph[nodes[i]].append(nodes[i + 1])
    return repr(graph), _code(cyclic)


def _ex_min_coins(rng: Rng) -> Example:
    coins = list(pick(rng, ((1, 5, 10, 25), (2, 5), (3, 7), (1, 3, 4), (5, 9, 12), (2, 6, 10))))
    amount = between(rng, 7, 40)
    best = [0] + [math.inf] * amount
    for value in range(1, amount + 1):
        best[value] = min((best[value - c] + 1 for c in coins if c <= value), default=math.inf)
    return f"{coins!r}, {amount}", _code(int(best[amount]) if best[amount] != math.inf else -1)


def _ex_lis(rng: Rng) -> Example:
    numbers = _ints(rng, between(rng, 6, 9), 0, 20)
    lengths = [1] * len(numbers)
    for j in range(len(numbers)):
        for i in range(j):
            if numbers[i] < numbers[j]:
                lengths[j] = max(lengths[j], lengths[i] + 1)
    return repr(numbers), _code(max(lengths))


def _ex_edit_distance(rng: Rng) -> Example:
    a, b = _words(rng, 2, 2)
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return f"{a!r}, {b!r}", _code(row[-1])


def _ex_knapsack(rng: Rng) -> Example:
    count = between(rng, 3, 5)
    weights, values, capacity = _ints(rng, count, 1, 9), _ints(rng, count, 1, 30), between(rng, 5, 15)
    best = [0] * (capacity + 1)
    for w, v in zip(weights, values, strict=True):
        for c in range(capacity, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return f"{weights!r}, {values!r}, {capacity}", _code(best[capacity])


def _ex_climbs(rng: Rng) -> Example:
    steps = sorted(sample(rng, range(1, 5), between(rng, 2, 3)))
    n = between(rng, 4, 12)
    ways = [1] + [0] * n
    for v in range(1, n + 1):
        ways[v] = sum(ways[v - s] for s in steps if s <= v)
    return f"{n}, {steps!r}", _code(ways[n])


def _ex_is_prime(rng: Rng) -> Example:
    n = between(rng, 2, 200)
    return str(n), _code(all(n % d for d in range(2, math.isqrt(n) + 1)))


def _ex_digit_sum(rng: Rng) -> Example:
    n = between(rng, 10, 999999)
    return str(n), _code(sum(int(d) for d in str(n)))


def _make_fizz_buzz(rng: Rng) -> tuple[str, Example]:
    a, b = sample(rng, (2, 3, 4, 5, 7), 2)
    first, second = sample(rng, ("Fizz", "Buzz", "Bang", "Pop", "Zap", "Whirr"), 2)
    core = (
        f"returns the strings for the numbers 1 to `n`, where multiples of {a} become '{first}', multiples of {b} "
        f"become '{second}', multiples of both become '{first}{second}' and every other number is written in digits"
    )
    n = between(rng, 5, 8)
    out = [
        first + second if v % a == 0 and v % b == 0 else first if v % a == 0 else second if v % b == 0 else str(v)
        for v in range(1, n + 1)
    ]
    return core, (str(n), _code(out))


def _ex_to_base(rng: Rng) -> Example:
    n, base = between(rng, 1, 5000), pick(rng, (2, 3, 5, 8, 12, 16))
    digits, value = "", n
    while value:
        digits = "0123456789abcdef"[value % base] + digits
        value //= base
    return f"{n}, {base}", _code(digits)


def _ex_gcd_list(rng: Rng) -> Example:
    g = between(rng, 2, 15)
    numbers = [g * v for v in _ints(rng, between(rng, 2, 4), 1, 12)]
    return repr(numbers), _code(math.gcd(*numbers))


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _code_item(rng: Rng, specs: Sequence[_Spec]) -> Draft:
    """A function spec: lead sentence, then 0-3 extra requirements, 0-3 edge cases, maybe an example call."""
    spec = pick(rng, specs)
    name = pick(rng, spec.names)
    core, example = spec.make(rng)
    parts = [pick(rng, load_bank(CodeBank).leads).format(sig=f"def {name}{spec.signature}", core=core)]
    requirements = sample(rng, spec.requirements, between(rng, 0, 3))
    edge_cases = sample(rng, spec.edge_cases, between(rng, 0, 3))
    if requirements:
        style = pick(rng, ("It should also {}.", "Requirements: {}.", "In addition, it must {}."))
        parts.append(style.format("; ".join(requirements) if style.startswith("Req") else _join(requirements)))
    if edge_cases:
        style = pick(rng, ("Edge cases: {}.", "Make sure that {}.", "Handle these cases: {}."))
        parts.append(style.format(_join(edge_cases) if style.startswith("Make") else "; ".join(edge_cases)))
    if example is not None and rng.random() < 0.8:
        arguments, result = example
        parts.append(f"For example, `{name}({arguments})` should return {result}.")
    complexity = spec.offset + REQUIREMENT_WEIGHT * len(requirements) + EDGE_CASE_WEIGHT * len(edge_cases)
    return Draft(" ".join(parts), "pass", CODE_DISTRACTORS, complexity)


def _no_example(rng: Rng) -> Example:
    return None


_EXAMPLES: Mapping[str, Callable[[Rng], Example]] = MappingProxyType(
    {
        "reverse_words": _ex_reverse_words,
        "count_vowels": _ex_count_vowels,
        "palindrome": _ex_palindrome,
        "caesar": _ex_caesar,
        "keep_even": _ex_keep_even,
        "long_words": _ex_long_words,
        "in_range": _ex_in_range,
        "divisible": _ex_divisible,
        "word_counts": _ex_word_counts,
        "char_histogram": _ex_char_histogram,
        "most_common": _ex_most_common,
        "group_by_initial": _ex_group_by_initial,
        "inventory": _ex_inventory,
        "sort_by_length": _ex_sort_by_length,
        "sort_people": _ex_sort_people,
        "top_k": _ex_top_k,
        "sort_by_last": _ex_sort_by_last,
        "parse_pairs": _ex_parse_pairs,
        "to_minutes": _ex_to_minutes,
        "parse_version": _ex_parse_version,
        "evaluate_sum": _ex_evaluate_sum,
        "pair_with_sum": _ex_pair_with_sum,
        "dedupe_sorted": _ex_dedupe_sorted,
        "merge_sorted": _ex_merge_sorted,
        "longest_unique": _ex_longest_unique,
        "flatten": _ex_flatten,
        "power_set": _ex_power_set,
        "permutations": _ex_permutations,
        "hanoi": _ex_hanoi,
        "merge_intervals": _ex_merge_intervals,
        "insert_interval": _ex_insert_interval,
        "meeting_rooms": _ex_meeting_rooms,
        "covered_length": _ex_covered_length,
        "free_slots": _ex_free_slots,
        "components": _ex_components,
        "has_cycle": _ex_has_cycle,
        "min_coins": _ex_min_coins,
        "lis": _ex_lis,
        "edit_distance": _ex_edit_distance,
        "knapsack": _ex_knapsack,
        "climbs": _ex_climbs,
        "is_prime": _ex_is_prime,
        "digit_sum": _ex_digit_sum,
        "to_base": _ex_to_base,
        "gcd_list": _ex_gcd_list,
    }
)
"""The example drawers a spec's `example` may name."""
_WRITERS: Mapping[str, Callable[[Rng], tuple[str, Example]]] = MappingProxyType({"fizz_buzz": _make_fizz_buzz})
"""The functions a spec's `writer` may name: they word the description and draw the example together."""


def _resolve(spec: FunctionSpec, where: str) -> _Spec:
    """A bank spec with its example drawer or writer looked up by name (unknown names are errors naming the file)."""
    make: Callable[[Rng], tuple[str, Example]]
    if spec.writer is not None:
        if spec.writer not in _WRITERS:
            raise AgentBalanceError(f"{where}.writer: unknown writer {spec.writer!r}; known: {', '.join(_WRITERS)}")
        make = _WRITERS[spec.writer]
    else:
        assert spec.does is not None  # the schema requires `does` or `writer`
        if spec.example is not None and spec.example not in _EXAMPLES:
            raise AgentBalanceError(f"{where}.example: unknown example {spec.example!r}; known: {', '.join(_EXAMPLES)}")
        make = _fixed(spec.does, _no_example if spec.example is None else _EXAMPLES[spec.example])
    return _Spec(spec.names, spec.signature, make, spec.requirements, spec.edge_cases, spec.offset)


@functools.cache
def topic_specs(topic: str) -> tuple[_Spec, ...]:
    """The specs of a code topic, resolved once per process."""
    specs: tuple[FunctionSpec, ...] = getattr(load_bank(CodeBank).topics, topic)
    return tuple(_resolve(spec, f"{bank_path(CodeBank)}: topics.{topic}.{i}") for i, spec in enumerate(specs))


def specs_topic(topic: str) -> Build:
    """The builder of a code topic: one spec of the topic's bank entry a call."""
    if topic not in CodeTopics.model_fields:
        raise ValueError(f"no code topic {topic!r} in the bank schema")
    return lambda rng: _code_item(rng, topic_specs(topic))
