"""What removing money keys at every depth costs an event, against the top-level removal of a
base tree (main), in one process.

    python -m bench.ingest.strip_money [--base-ref REF] [--rounds 5] [--repeat 20000]

app.ingest.privacy.strip_money runs for every stored event (its `properties`, a goal's `metadata`, a
server event's `properties`). The base tree's version looked at the top level only; this tree's
looks at every depth. Measured, per call, on the properties the tracker sends (tests of the
shapes in sdk/src/capture) and on two worst cases, three ways in each round, in turn:
- `base`: app/ingest/privacy.py's strip_money of REF (default: where this branch left main), loaded
  from git;
- `this`: this tree's (the JSON text lowered and searched in C; the value walked only when a
  key is found);
- `walk`: the other way to look at every depth, a walk in Python that stops at the first money
  key, for comparison.
Prints per shape the µs per call of each (range over the rounds) and this / base, walk / base
(range of the rounds' ratios). Rounds alternate the order of the three.
"""
import argparse
import importlib.util
import subprocess
import tempfile
import timeit
from typing import Any

from app.ingest.privacy import MONEY_KEYS, strip_money
from bench.harness import ROOT

LINK = "https://shop.example/products/blue-widget?ref=home"
SHAPES: dict[str, dict[str, Any]] = {
    "pageview, UTM tags": {"utm_source": "newsletter", "utm_medium": "email",
                           "utm_campaign": "spring"},
    "click on a link (nested)": {"element": "a", "position": {"x": 412, "y": 1290},
                                 "attributes": {"class": "button primary", "href": LINK,
                                                "text": "Add to cart"},
                                 "href": LINK, "outbound": True},
    "form_submit, field names": {"formName": "signup",
                                 "fields": ["name", "company", "plan", "newsletter"]},
    "performance": {"lcp": 1834.2},
    "custom, a cart (objects in a list)": {"step": 2, "cart": {"items": [
        {"sku": "A1", "qty": 2, "title": "Blue widget"},
        {"sku": "B7", "qty": 1, "title": "Red widget"}]}},
    "error, 2 KB stack": {"message": "TypeError: x is undefined",
                          "stack": "at render (app.js:1:1)\n" * 85, "context": None},
    "worst: 16 KiB, 6 levels": {f"k{i}": {"a": {"b": {"c": {"d": [i, "v" * 20]}}}}
                                for i in range(230)},
    "money at depth 3 (removed)": {"step": 3, "cart": {"items": [
        {"sku": "A1", "qty": 2, "amount": 19.99}], "currency": "EUR"}},
}


def holds_money_key(value: dict | list) -> bool:
    """A walk in Python over the objects and lists only (never into a string), stopping at the
    first money key."""
    if type(value) is dict:
        if not MONEY_KEYS.isdisjoint(map(str.lower, value)):
            return True
        children = value.values()
    else:
        children = value
    for child in children:
        kind = type(child)
        if (kind is dict or kind is list) and holds_money_key(child):
            return True
    return False


def walk_strip_money(value: Any) -> Any:
    """The walk's answer, then this tree's rebuild when there is a money key."""
    return strip_money(value) if holds_money_key(value) else value


def base_function(ref: str) -> Any:
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:app/ingest/privacy.py"],
                            capture_output=True, check=True).stdout
    with tempfile.NamedTemporaryFile(suffix=".py") as file:
        file.write(source)
        file.flush()
        spec = importlib.util.spec_from_file_location("base_privacy", file.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module.strip_money


def per_call_us(function: Any, value: Any, repeat: int) -> float:
    return min(timeit.repeat(lambda: function(value), number=repeat, repeat=3)) / repeat * 1e6


def span(values: list[float], digits: int) -> str:
    return f"{min(values):.{digits}f}–{max(values):.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-ref", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20_000)
    args = parser.parse_args()
    ref = args.base_ref or subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True,
        check=True).stdout.strip()
    variants = {"base": base_function(ref), "this": strip_money, "walk": walk_strip_money}
    for name, value in SHAPES.items():  # the same answers, money removed at depth by both
        assert variants["this"](value) == variants["walk"](value), name
    times = {shape: {variant: [] for variant in variants} for shape in SHAPES}
    order = list(variants)
    for round_number in range(args.rounds):
        for variant in order[round_number % 3:] + order[:round_number % 3]:
            for shape, value in SHAPES.items():
                times[shape][variant].append(per_call_us(variants[variant], value, args.repeat))
    print(f"base {ref[:7]}; {args.rounds} rounds of {args.repeat} calls (best of 3) per shape\n")
    print("| properties | base µs | this µs | walk µs | this / base | walk / base |")
    print("|---|---:|---:|---:|---:|---:|")
    for shape, measured in times.items():
        base = measured["base"]
        ratios = [this / then for this, then in zip(measured["this"], base, strict=True)]
        walk_ratios = [walk / then for walk, then in zip(measured["walk"], base, strict=True)]
        print(f"| {shape} | {span(base, 2)} | {span(measured['this'], 2)} | "
              f"{span(measured['walk'], 2)} | {span(ratios, 1)} | {span(walk_ratios, 1)} |")


if __name__ == "__main__":
    main()
