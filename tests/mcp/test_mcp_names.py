"""Public MCP tool names: always valid for the API, unique, and a pure function of the real names."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from services.mcp.names import is_valid_tool_name, public_tool_name, server_names, tool_names


def test_awkward_names_become_valid_and_readable() -> None:
    names = tool_names("srv", ["get/file", "ns:tool", "café", "a b.c", "ok_name-1"])
    assert names["get/file"] == "mcp__srv__get_file"
    assert names["ns:tool"] == "mcp__srv__ns_tool"
    assert names["café"] == "mcp__srv__caf_"
    assert names["a b.c"] == "mcp__srv__a_b_c"
    assert names["ok_name-1"] == "mcp__srv__ok_name-1"
    assert all(is_valid_tool_name(n) for n in names.values())


def test_long_names_are_cut_with_a_stable_hash() -> None:
    long = "x" * 200
    other = "x" * 199 + "y"
    names = tool_names("srv", [long, other])
    assert len(names[long]) == 64 and len(names[other]) == 64
    assert names[long] != names[other]
    assert names[long].startswith("mcp__srv__xxx") and names[long][-9] == "_"
    assert tool_names("srv", [long]) == {long: names[long]}  # the same alone as with others


def test_collisions_are_settled_deterministically() -> None:
    tools = ["a.b", "a b", "a_b", "a:b"]
    names = tool_names("srv", tools)
    assert names["a_b"] == "mcp__srv__a_b"  # the name that needed no change keeps it
    assert len(set(names.values())) == 4
    for _ in range(10):  # any listing order gives the same answer
        random.shuffle(tools)
        assert tool_names("srv", tools) == names


def test_server_names_collide_too() -> None:
    parts = server_names(["my.srv", "my_srv", "über"])
    assert parts["my_srv"] == "my_srv" and parts["my.srv"] != "my_srv" and parts["über"] == "_ber"
    assert len(set(parts.values())) == 3
    assert public_tool_name("my server", "do it") == "mcp__my_server__do_it"


def test_names_taken_by_other_servers_are_avoided() -> None:
    taken: set[str] = set()
    first = tool_names("a", ["b__c"], taken)
    second = tool_names("a__b", ["c"], taken)
    assert first["b__c"] == "mcp__a__b__c" and second["c"] != "mcp__a__b__c"
    assert is_valid_tool_name(second["c"])


@given(st.lists(st.text(min_size=0, max_size=120), min_size=1, max_size=12), st.text(max_size=80))
def test_any_names_give_valid_unique_names(tools: list[str], server: str) -> None:
    part = server_names([server])[server]
    names = tool_names(part, tools)
    assert set(names) == set(tools)
    assert len(set(names.values())) == len(names)
    assert all(is_valid_tool_name(n) for n in names.values())
