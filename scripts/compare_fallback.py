#!/usr/bin/env python3
"""How many layers qconvert's accuracy search moves, against the order Intel
Neural Compressor's default ("basic") tuning strategy falls back ops in, on
the same model, data and target (issue 24's comparison; not a product flag).

  compare_fallback.py --bin BUILD --model M.onnx --calib DIR --data DIR --labels L.npy
                      [--max-drop 0.5] [--limit N] [--json OUT.json] [-- QCONVERT_FLAGS...]

Both sides move layers to float (qconvert --move-to float), the candidates
being the same: each layer with its fused Relu/Clip, as the search's report
lists them. INC's order (neural_compressor/strategy/basic.py, next_tune_cfg:
"Fallback OP One by One", then "Fallback Multiple OPs Accumulated"): each
quantized op falls back alone, from the bottom of the graph up, stopping at
the first that meets the target; then ops fall back cumulatively in the
order of the accuracy each reached alone, best first, until the target holds.
Every trial is one qconvert plus one qrun over DATA; the count of full
evaluations is printed for both sides. Flags after -- go to every qconvert
(e.g. -- --per-tensor, for a conversion that needs layers moved)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 3):
        sys.exit(f"error: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[:400]}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="build directory with qprofile, qconvert, qrun")
    ap.add_argument("--model", required=True)
    ap.add_argument("--calib", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--max-drop", type=float, default=0.5)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json", help="write the comparison here")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    q = lambda name: os.path.join(a.bin, name)
    limit = ["--limit", str(a.limit)] if a.limit else []
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "p.json")
        run([q("qprofile"), a.model, "--data", a.calib, "-o", profile, "--quiet"])

        # qconvert's search.
        t0 = time.time()
        report = os.path.join(tmp, "search.json")
        run([q("qconvert"), a.model, "--profile", profile, "-o", os.path.join(tmp, "s.onnx"), "--data", a.data,
             "--labels", a.labels, "--max-drop", str(a.max_drop), "--move-to", "float", "--report", report] + limit + extra)
        rep = json.load(open(report))
        s = rep["search"]
        ours = {"met": s["met"], "moved": len(s["moved"]), "evaluations": s["evaluations"], "before_drop": s["before"],
                "after_drop": s["after"], "seconds": round(time.time() - t0, 1)}
        if not s["ranking"] or s["evaluations"] == 1:
            result = {"model": a.model, "max_drop": a.max_drop, "flags": extra, "ours": ours, "inc": None}
            print(json.dumps(result))
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(result, f, indent=1)
            return
        groups = {r["node"]: r.get("nodes", [r["node"]]) for r in s["ranking"]}
        position = {n["node"]: i for i, n in enumerate(rep["nodes"])}
        bottom_up = sorted(groups, key=lambda c: position.get(c, -1), reverse=True)

        # INC's order, one full evaluation per trial.
        t0 = time.time()
        trials = 0

        def drop_with(moved):
            nonlocal trials
            trials += 1
            out = os.path.join(tmp, "inc.onnx")
            cmd = [q("qconvert"), a.model, "--profile", profile, "-o", out] + extra
            for c in moved:
                for n in groups[c]:
                    cmd += ["--exclude-node", n]
            run(cmd)
            r = run([q("qrun"), out, "--data", a.data, "--reference", a.model, "--labels", a.labels, "--json"] + limit)
            d = json.loads(r.stdout)["accuracy_drop_pp"]
            return float("inf") if d is None or d != d else d

        inc = {"met": False, "moved": None}
        alone = {}
        for c in bottom_up:
            alone[c] = drop_with([c])
            if alone[c] <= a.max_drop:
                inc = {"met": True, "moved": 1, "stage": "one by one", "after_drop": alone[c]}
                break
        if not inc["met"]:
            order = sorted(alone, key=lambda c: alone[c])  # lowest drop alone = highest accuracy first
            for k in range(2, len(order) + 1):
                d = drop_with(order[:k])
                if d <= a.max_drop:
                    inc = {"met": True, "moved": k, "stage": "accumulated", "after_drop": d}
                    break
        inc.update({"evaluations": trials, "seconds": round(time.time() - t0, 1)})
        result = {"model": a.model, "max_drop": a.max_drop, "flags": extra, "candidates": len(groups), "ours": ours,
                  "inc": inc}
        print(json.dumps(result))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
