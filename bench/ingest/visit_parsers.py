"""What the visit context's parsers cost in one process: memory and time per call.

    python -m bench.ingest.visit_parsers [--repeat 20000]

Each measurement runs in a fresh interpreter (its RSS before and after is the measured part's
memory, Python's import of ua-parser included), against a no-op call measured in the same
interpreter:

- ua-parser on the Rust accelerator with all three matchers (its default) against egis's
  browser and OS matchers only (app.context.user_agent): memory, a new User-Agent's parse;
- the caches: functools.lru_cache around egis's whole derivation (what app.context.user_agent
  does) against ua-parser's own CachingResolver (Lru, S3Fifo) around the parser, for a cached
  User-Agent;
- iptocc's lookup, and the whole request context (app.context.request.derive) for a new and a
  repeated request;
- what a request adds on the hot path: request_context in a browser request, and each event's
  own columns (app.tracking.ingest.page_columns).
Prints one Markdown table.
"""
import argparse
import json
import subprocess
import sys

from bench.harness import ROOT

PRELUDE = """
import json, sys, time
import app  # the package (Flask, Werkzeug) before the measured part: not the parser's memory
def rss():
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024
def per_call(function, repeat):
    start = time.perf_counter()
    for number in range(repeat):
        function(number)
    return (time.perf_counter() - start) / repeat * 1e6
UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
      "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.{{}}.86")
repeat = {repeat}
noop = per_call(lambda number: None, repeat)
before = rss()
"""

CACHING_RESOLVER = """
import ua_parser
from ua_parser import CachingResolver, Domain
from ua_parser.caching import CACHE
from ua_parser.regex import Resolver
built = ua_parser.load_lazy_builtins()
resolver = CachingResolver(Resolver((built[0], built[1], [])), CACHE(2048))
resolver(UA.format(1), Domain.USER_AGENT | Domain.OS)
memory = rss() - before
new = per_call(lambda n: resolver(UA.format(1), Domain.USER_AGENT | Domain.OS), repeat)
"""

CASES = {
    "ua-parser, all three matchers (its default)": """
import ua_parser
from ua_parser import Domain
from ua_parser.regex import Resolver
resolver = Resolver(ua_parser.load_lazy_builtins())
resolver(UA.format(0), Domain.ALL)
memory = rss() - before
new = per_call(lambda n: resolver(UA.format(n), Domain.ALL), repeat)
""",
    "ua-parser, browser and OS matchers (app.context.user_agent)": """
from app.context import user_agent
user_agent.describe(UA.format(0))
memory = rss() - before
new = per_call(lambda n: user_agent._describe.__wrapped__(UA.format(n), "?0", '"Windows"'),
               repeat)
""",
    "cached: functools.lru_cache around the derivation (app.context.user_agent)": """
from app.context import user_agent
user_agent.describe(UA.format(1))
memory = rss() - before
new = per_call(lambda n: user_agent.describe(UA.format(1), "?0", '"Windows"'), repeat)
""",
    **{f"cached: ua-parser's CachingResolver({cache}) around the parser":
       CACHING_RESOLVER.replace("CACHE", cache) for cache in ("Lru", "S3Fifo")},
    "iptocc lookup (app.context.country, registry data)": """
from app.context import country
addresses = [f"193.99.{n % 256}.{n // 256 % 256}" for n in range(repeat)]
country.country(addresses[0], country.registry_lookup)
memory = rss() - before
new = per_call(lambda n: country.country(addresses[n], country.registry_lookup), repeat)
""",
    "request context, a new User-Agent and address each (app.context.request.derive)": """
from app.context import country, request
derive = request.derive
memory = rss() - before
new = per_call(lambda n: derive(UA.format(n), "?0", '"Windows"', "de-DE",
                                f"193.99.{n % 256}.{n // 256 % 256}", "large",
                                country.registry_lookup), repeat)
""",
    "request context, repeated (app.context.request.derive)": """
from app.context import country, request
derive = request.derive
derive(UA.format(1), "?0", '"Windows"', "de-DE", "193.99.144.80", "large",
       country.registry_lookup)
memory = rss() - before
new = per_call(lambda n: derive(UA.format(1), "?0", '"Windows"', "de-DE", "193.99.144.80",
                                "large", country.registry_lookup), repeat)
""",
    "added per request: request_context in a browser request (cached)": """
from flask import Flask, g
from app.context import request
flask_app = Flask("bench")
flask_app.config["GEOIP_DB"] = ""
request.init_app(flask_app)
environ = {"REMOTE_ADDR": "193.99.144.80", "HTTP_USER_AGENT": UA.format(86),
           "HTTP_ACCEPT_LANGUAGE": "de-DE,de;q=0.9", "HTTP_SEC_CH_UA_MOBILE": "?0",
           "HTTP_SEC_CH_UA_PLATFORM": '"Windows"'}
with flask_app.test_request_context("/api/events", method="POST", environ_base=environ):
    g.browser = True
    request.request_context({"screenWidth": 1280})
    memory = rss() - before
    new = per_call(lambda n: request.request_context({"screenWidth": 1280}), repeat)
""",
    "added per event: path, host and acquisition of a page view with UTM tags (cached)": """
from app.tracking.ingest import page_columns
URL = "https://bench.example/page/1?utm_source=newsletter&utm_medium=email&utm_campaign=spring"
page_columns("pageview", URL, "https://www.google.com/", "bench.example")
memory = rss() - before
new = per_call(lambda n: page_columns("pageview", URL, "https://www.google.com/",
                                      "bench.example"), repeat)
""",
    "added per event: path and host of another event (cached)": """
from app.tracking.ingest import page_columns
page_columns("click", "https://bench.example/page/2", None, "bench.example")
memory = rss() - before
new = per_call(lambda n: page_columns("click", "https://bench.example/page/2", None,
                                      "bench.example"), repeat)
""",
}

EPILOGUE = """
print(json.dumps({"memory": memory, "call": new, "noop": noop}))
"""


def run(case: str, repeat: int) -> dict[str, float]:
    script = PRELUDE.format(repeat=repeat) + case + EPILOGUE
    output = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20_000)
    args = parser.parse_args()
    print("| what | memory, MiB | µs per call | no-op call, µs |")
    print("|---|---|---|---|")
    for name, case in CASES.items():
        result = run(case, args.repeat)
        print(f"| {name} | {result['memory']:.1f} | {result['call']:.2f} | "
              f"{result['noop']:.3f} |")


if __name__ == "__main__":
    main()
