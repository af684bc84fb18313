"""One of the processes of the shared-audit-file load test: a burst of tool calls with
the trusted config in ``$FAILSECURE_CONFIG``, its summary as one JSON line on stdout.

    python load_proc.py <index> <threads> <tasks>
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from load_helpers import Gates, Load, Sampler, burst  # noqa: E402

from failsecure import guard, policy  # noqa: E402


def main() -> None:
    index, threads, tasks = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    config = policy.reload()
    assert config.error is None and config.audit_path, config.error
    adapter = Load()
    adapter.patch()
    adapter.decide("warm-up", [], call_id=f"p{index}-warm-up")  # as in the in-process tests
    gates = Gates()
    try:
        with Sampler() as sampler:
            calls = burst(adapter, gates, threads, tasks, prefix=f"p{index}-", seed=10 * index)
    finally:
        gates.release.set()
    hung = [c.seconds for c in calls if c.kind == "hang"]
    print(json.dumps({
        "index": index,
        "decisions": len(calls),
        "allowed": sum(not c.decision.denied for c in calls),
        "wrongly_allowed": sum(not c.decision.denied for c in calls if c.kind != "allow"),
        "hang_max_s": max(hung),
        "peak_threads": sampler.peak_threads,
        "peak_rss_kb": sampler.peak_rss,
        "abandoned": guard.abandoned_calls(),
    }))
    sys.stdout.flush()
    from failsecure import audit

    audit.flush(30.0)  # os._exit skips the exit's own (bounded) flush of the audit queue
    os._exit(0)  # hung workers may still be returning; the audit lines are all written


if __name__ == "__main__":
    main()
