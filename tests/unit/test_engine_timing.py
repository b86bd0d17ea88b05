"""The serving engine as a scenario setting, measured kernels in the cost model, engine profiles."""

from __future__ import annotations

from explorer.interfaces import view_state as us
from explorer.interfaces.cli.commands import build_parser
from explorer.interfaces.cli.options import scenario_from_args
from explorer.specs.scenario import Scenario


def test_engine_round_trips_url_cli_and_stored_view():
    sc = Scenario(engine="sglang")
    assert us.encode(us.view_of_scenario(sc))["eng"] == "sglang"
    state = us.decode({"eng": "trtllm"})
    assert state.warnings == () and us.scenario_from_view(state.values).engine == "trtllm"
    cli = scenario_from_args(build_parser().parse_args(["evaluate", "--engine", "trtllm"]))
    assert cli.engine == "trtllm"
    assert us.scenario_from_view(us.decode_view(us.view_of_scenario(sc)).values) == sc


def test_a_saved_scenario_without_engine_opens_as_vllm():
    old = Scenario().model_dump(mode="json")
    del old["engine"]
    assert Scenario.model_validate(old).engine == "vllm"
    assert us.decode({}).values["eng"] == "vllm"
