# shellcheck shell=bash
# Case due of bench/run.sh (sourced), issue 27: how late the due steps of waiting operations run
# with several gateways (bench/due.py: 4 gateways, 2 workers, 300 provisions of 300 ms at 20/s;
# its docstring defines each figure). With --due-reference DIR, each run is followed by the same
# run of the binaries in DIR (a Release build of another commit: the reference), side by side.
# The summary gives each figure's median over the runs.

due_once() { # $1 label, $2 build directory
  local cmd=(python3 "$top/bench/due.py" "$2" 4 2 300 20)
  record_command "${cmd[@]}"
  "${cmd[@]}" | sed "s/^/$1 /" | tee -a "$workdir/due.txt" | sed 's/^/  /' ||
    problem "due: the $1 run failed"
}

case_due() {
  echo "== due: 300 provisions of 300 ms at 20/s through 4 gateways, 2 workers; lateness of" \
    "their polls${due_reference:+, side by side with $due_reference}"
  : >"$workdir/due.txt"
  local run
  for ((run = 1; run <= runs; run++)); do
    due_once current "$build_dir"
    if [ -n "$due_reference" ]; then due_once reference "$due_reference"; fi
  done
  python3 - "$workdir/due.txt" <<'PY'
import re, statistics, sys
figures = {}
for line in open(sys.argv[1]):
    label, rest = line.split(" ", 1)
    for name, value in re.findall(r"(\w+)=([0-9.]+)", rest):
        figures.setdefault((label, name), []).append(float(value))
for label in ("current", "reference"):
    names = [n for (l, n) in figures if l == label and ("late" in n or "per_op" in n)]
    if names:
        print("  %s medians: %s" % (label, " ".join(
            "%s=%g" % (n, statistics.median(figures[(label, n)])) for n in names)))
PY
}
