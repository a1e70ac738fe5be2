"""Running `agentbalance serve` in production: the budget governor on traffic costlier than the validation split,
daily USD limits per key that survive a restart, Prometheus metrics, health for load balancers, and the grade of
an answer where the world knows it. Real HTTP on 127.0.0.1 with the `openai` client and raw requests."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.experiment import ExperimentSpec
from agentbalance.query import text_query
from agentbalance.serve import ServedModel, ServerThread, create_app
from agentbalance.serve.governor import OperatingPoint
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.worlds.replay import ReplayWorld
from agentbalance.worlds.simulated import SimulatedWorld
from tests.serving import SERVER_KEY, USER, client, served, serving
from tests.test_replay_world import mcq_tables, write_world

OTHER_KEY = "ab-second-client-key-555"
LONG_CONTEXT = [
    {"role": "system", "content": "You are a support assistant for a large retailer. " * 40},
    {"role": "user", "content": "I have a question about my order history. " * 30},
    {"role": "assistant", "content": "Of course, tell me what you need. " * 30},
]


@pytest.fixture(scope="module")
def sim_model(trained_run: Path, encoder: TextEncoder) -> ServedModel:
    return served(trained_run, SimulatedWorld(Catalog.load(), seed=0), encoder)


def get(url: str, path: str, key: str | None = None) -> tuple[int, str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def samples(url: str, key: str | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics, read with prometheus-client's own parser: (name, labels) -> value."""
    status, text = get(url, "/metrics", key)
    assert status == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def chat(url: str, messages: list[dict[str, Any]], key: str = "unused") -> Any:
    return client(url, key).chat.completions.create(model="agentbalance", messages=messages)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the governor


def served_tok(url: str, questions: list[str]) -> tuple[list[float], list[dict[str, Any]]]:
    """Each question asked in a long conversation: its Tok (USD per 100 queries) and its `agentbalance` object."""
    toks, extras = [], []
    for question in questions:
        extra = chat(url, [*LONG_CONTEXT, {"role": "user", "content": question}]).model_extra["agentbalance"]
        toks.append(extra["cost_usd"] * 100)
        extras.append(extra)
    return toks, extras


@pytest.mark.slow
def test_the_governor_brings_the_spend_of_costlier_traffic_back_under_the_budget(
    trained_run: Path, encoder: TextEncoder
) -> None:
    """Traffic costlier than the controller was built for: long conversations, and every price three times what
    the catalog it was trained on said (a new price era). Unchecked, the spend runs over the budget; governed, the
    same questions cost less and the later windows are back under the budget."""
    shipped = Catalog.load()
    tripled = [b.model_copy(update={"price_in": 3 * b.price_in, "price_out": 3 * b.price_out}) for b in shipped]
    model = served(trained_run, SimulatedWorld(Catalog(tripled, shipped.assumptions), seed=0), encoder)
    budget = model.controller.budget
    assert budget.tok is not None
    questions = [f"What is {i} * {i + 7} - {2 * i}?" for i in range(80)]
    with serving(model) as url:
        static, _ = served_tok(url, questions)
    with serving(model, budget_window=20) as url:
        governed, extras = served_tok(url, questions)
        gauges = samples(url)
    assert sum(static) / len(static) > 1.1 * budget.tok  # the shift: unchecked, the spend runs over the budget
    late = governed[40:]
    assert sum(late) / len(late) < sum(static[40:]) / len(static[40:])  # the governor spent less on the same
    assert sum(late) / len(late) <= 1.05 * budget.tok  # and brought the windows back under the budget
    points = [extra["governor"]["operating_point"] for extra in extras]
    assert all(0 < point["tok_scale"] <= 1 and 0 < point["lat_scale"] <= 1 for point in points)  # never looser
    assert min(point["tok_scale"] for point in points) < 1
    assert min(extra["operating_point"]["delta_shift"] for extra in extras) < 0
    state = extras[-1]["governor"]
    assert gauges[("agentbalance_governor_tok_scale", ())] == pytest.approx(state["operating_point"]["tok_scale"])
    assert gauges[("agentbalance_governor_window_mean_tok", ())] == pytest.approx(state["mean_tok"])


def test_a_tightened_budget_becomes_a_cheaper_operating_point_never_a_looser_one(sim_model: ServedModel) -> None:
    model = sim_model
    assert model.construction_point(None, OperatingPoint()).delta_shift == 0
    half = model.construction_point(None, OperatingPoint(0.5, 1.0, 0.33))
    floor = model.construction_point(None, OperatingPoint(0.125, 1.0, 1.0))
    assert floor.delta_shift < half.delta_shift < 0
    questions = [text_query(f"What is {i} * {i + 7} - {2 * i}?") for i in range(20)]
    costs = []
    for point in (OperatingPoint(), OperatingPoint(0.5, 1.0, 0.33), OperatingPoint(0.125, 1.0, 1.0)):
        systems = model.construct_many(questions, model.construction_point(None, point))
        catalog = model.world.catalog
        costs.append(sum(catalog[a.backbone].tok_cost(catalog.assumptions) for mas in systems for a in mas.agents))
    assert costs[0] >= costs[1] >= costs[2] and costs[2] < costs[0]


def test_past_the_offsets_span_a_growing_share_of_questions_goes_to_the_cheapest_backbone_alone(
    sim_model: ServedModel,
) -> None:
    model = sim_model
    catalog = model.world.catalog
    cheapest = min(model.controller.backbones, key=lambda name: catalog[name].tok_cost(catalog.assumptions))
    questions = [text_query(f"What is {i} * {i + 7} - {2 * i}?") for i in range(200)]

    def alone(point: OperatingPoint) -> set[str]:
        systems = model.construct_many(questions, model.construction_point(None, point))
        return {
            q.id for q, mas in zip(questions, systems, strict=True) if [a.backbone for a in mas.agents] == [cheapest]
        }

    within_span = model.construction_point(None, OperatingPoint(0.125**0.4, 1.0, 0.4))
    assert within_span.fallback is None and within_span.delta_shift < 0
    three_quarters = model.construction_point(None, OperatingPoint(0.125**0.75, 1.0, 0.75))
    assert three_quarters.fallback == cheapest and three_quarters.fallback_share == pytest.approx(0.5)
    assert three_quarters.delta_shift == model.construction_point(None, OperatingPoint(0.125, 1.0, 1.0)).delta_shift
    some, more = alone(OperatingPoint(0.125**0.75, 1.0, 0.75)), alone(OperatingPoint(0.125**0.9, 1.0, 0.9))
    assert 70 <= len(some) <= 130 and some < more  # about half; the same questions stay, others join them
    assert alone(OperatingPoint(0.125**0.75, 1.0, 0.75)) == some  # a question is always treated alike
    assert alone(OperatingPoint(0.125, 1.0, 1.0)) == {q.id for q in questions}  # the floor: every one alone
    fastest = model.construction_point(None, OperatingPoint(1.0, 0.125, 1.0)).fallback  # Lat the tighter axis
    assert fastest == min(model.controller.backbones, key=lambda name: catalog[name].latency(catalog.assumptions))


def test_a_budget_conditioned_model_is_tightened_within_its_range_first(
    trained_run: Path, encoder: TextEncoder
) -> None:
    import shutil

    folder = trained_run.parent / "conditioned-for-governor"
    if not folder.exists():
        shutil.copytree(trained_run, folder)
        config = json.loads((folder / "config.json").read_text())
        config["budget_range"] = {"loosest": config["budget"], "ratio": 8.0, "steps": 2, "deltas": [0.0, 0.0]}
        (folder / "config.json").write_text(json.dumps(config))
    model = served(folder, SimulatedWorld(Catalog.load(), seed=0), encoder)
    loosest = model.controller.budget
    within = model.construction_point(None, OperatingPoint(0.5, 1.0, 0.33))
    assert within.budget == Budget(loosest.tok * 0.5, loosest.lat * 0.5) and within.delta_shift == 0
    beyond = model.construction_point(None, OperatingPoint(0.125 / 2, 1.0, 1.0))
    assert beyond.budget == model.controller.budget_range.at(1 / 8) and beyond.delta_shift < 0


# ----------------------------------------------------------------------------- spend limits per key


def test_a_key_past_its_daily_limit_gets_a_429_the_others_do_not_and_a_restart_remembers(
    sim_model: ServedModel, tmp_path: Path
) -> None:
    options = {"api_keys": (SERVER_KEY, OTHER_KEY), "max_usd_per_day": 1e-9, "spend_db": tmp_path / "spend.sqlite"}
    with serving(sim_model, **options) as url:
        assert chat(url, [USER], SERVER_KEY).choices[0].message.content  # under the limit when it started
        with pytest.raises(openai.RateLimitError) as refused:
            chat(url, [USER], SERVER_KEY)
        assert chat(url, [USER], OTHER_KEY).choices[0].message.content  # another key, its own limit
    response = refused.value.response
    assert response.status_code == 429 and 1 <= int(response.headers["retry-after"]) <= 86_400
    assert refused.value.code == "spend_limit_reached" and "resets in" in refused.value.message
    with serving(sim_model, **options) as url, pytest.raises(openai.RateLimitError):
        chat(url, [USER], SERVER_KEY)  # the spend is on disk: a restart does not reset it
    assert SERVER_KEY.encode() not in (tmp_path / "spend.sqlite").read_bytes()


# ----------------------------------------------------------------------------- metrics and health


def test_metrics_count_requests_spend_tokens_and_agents_as_the_responses_say(sim_model: ServedModel) -> None:
    with serving(sim_model, api_keys=(SERVER_KEY,)) as url:
        answers = [chat(url, [{"role": "user", "content": f"What is {i} + {i}?"}], SERVER_KEY) for i in range(3)]
        with pytest.raises(openai.BadRequestError):
            chat(url, [{"role": "assistant", "content": "hi"}], SERVER_KEY)
        assert get(url, "/metrics")[0] == 401  # the metrics need the key too
        metrics = samples(url, SERVER_KEY)
    extras = [answer.model_extra["agentbalance"] for answer in answers]
    assert metrics[("agentbalance_requests_total", (("status", "200"), ("stream", "false")))] == 3
    assert metrics[("agentbalance_requests_total", (("status", "400"), ("stream", "false")))] == 1
    assert metrics[("agentbalance_spend_usd_total", ())] == pytest.approx(sum(e["cost_usd"] for e in extras))
    prompt = sum(answer.usage.prompt_tokens for answer in answers)
    assert metrics[("agentbalance_tokens_total", (("kind", "prompt"),))] == prompt
    agents = sum(len(e["agents"]) for e in extras)
    counted = sum(v for (name, _), v in metrics.items() if name == "agentbalance_agents_total")
    assert counted == agents and metrics[("agentbalance_request_seconds_count", ())] == 3
    assert metrics[("agentbalance_requests_in_flight", ())] == 0


def test_health_is_ready_while_serving_and_not_once_draining(sim_model: ServedModel) -> None:
    app = create_app(sim_model)
    with ServerThread(app) as url:
        assert get(url, "/health") == (200, '{"status":"ok"}')
        app.state.drain.begin()
        status, body = get(url, "/health")
        assert status == 503 and json.loads(body) == {"status": "draining"}


# ----------------------------------------------------------------------------- the grade, where the world knows it


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = write_world(tmp_path_factory.mktemp("world") / "tiny-mcq", *mcq_tables())
    spec = BuildSpec(ExperimentSpec(world=f"replay:{folder}", sizes=(12, 4, 4)), Budget(tok=5.0, lat=60.0),
                     TrainConfig(epochs=1), restarts=1)  # fmt: skip
    return build(spec, tmp_path_factory.mktemp("runs") / "run").out, folder


@pytest.mark.slow
def test_in_a_replay_world_the_response_carries_the_recorded_grade(
    replay_run: tuple[Path, Path], encoder: TextEncoder
) -> None:
    run, folder = replay_run
    world = ReplayWorld.load(folder)
    model = served(run, world, encoder)
    with serving(model) as url:
        graded = [
            client(url).chat.completions.create(
                model="agentbalance", messages=[USER], extra_body={"query_id": query.id}
            )
            for query in world.queries("test")
        ]
    traces = model.controller.run(world.queries("test"), world)
    assert [g.model_extra["agentbalance"]["correct"] for g in graded] == [t.correct for t in traces]
    assert all(isinstance(g.model_extra["agentbalance"]["correct"], bool) for g in graded)
    assert [g.model_extra["agentbalance"]["score"] for g in graded] == [t.score for t in traces]


def test_in_the_simulator_a_users_question_has_no_grade(sim_model: ServedModel) -> None:
    with serving(sim_model) as url:
        assert chat(url, [USER]).model_extra["agentbalance"]["correct"] is None
