# shellcheck shell=bash
# Case halt of bench/run.sh (sourced), issue 42: how soon a DELETE halts the creation it meets
# (bench/halt.py: one gateway, two workers, --halt-count provisions whose one step works 30 s,
# each deleted 1 to 10 s after its 202; sim's blocking step, then an exec program). The summary
# gives each figure's median over the runs.

case_halt() {
  echo "== halt: $halt_count provisions of one 30-s step each, deleted 1 to 10 s after their" \
    "202 (sim blocking, then exec)"
  : >"$workdir/halt.txt"
  local run variant
  for ((run = 1; run <= runs; run++)); do
    for variant in sim exec; do
      local cmd=(python3 "$top/bench/halt.py" "$build_dir" "$variant" "$halt_count")
      record_command "${cmd[@]}"
      "${cmd[@]}" | sed "s/^/$variant /" | tee -a "$workdir/halt.txt" | sed 's/^/  /' ||
        problem "halt: the $variant run failed"
    done
  done
  python3 - "$workdir/halt.txt" <<'PY'
import re, statistics, sys
figures = {}
for line in open(sys.argv[1]):
    label, rest = line.split(" ", 1)
    for name, value in re.findall(r"(\w+)=([0-9.]+)", rest):
        figures.setdefault((label, name), []).append(float(value))
for label in ("sim", "exec"):
    names = [n for (l, n) in figures if l == label and n not in ("count", "work_s")]
    if names:
        print("  %s medians: %s" % (label, " ".join(
            "%s=%g" % (n, statistics.median(figures[(label, n)])) for n in names)))
PY
}
