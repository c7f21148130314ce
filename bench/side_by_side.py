#!/usr/bin/env python3
"""This tree against another commit's, side by side: the lifecycle case, long_ops' head-of-line
phase and noisy_neighbor, each tree's own bench/run.sh in turn, round after round, so that both
meet the same machine; then the medians of each figure and their ratio (this tree / reference).

    git worktree add /tmp/osbq-ref <commit>
    python3 bench/side_by_side.py /tmp/osbq-ref [--rounds 3] [--hol-scale 0.2] [--noisy-count 160]
    (--noisy-count 0: lifecycle and hol only; --this-env OSBQ_NAME=VALUE, repeatable: a
    setting for this tree's lifecycle and hol stacks only, bench/run.sh --env, e.g.
    OSBQ_EVENTS_MAX=0 to set a feature the reference lacks aside)

Each bench/run.sh builds its tree's Release binaries into that tree's build-bench/ (once) and
starts its own stacks on free loopback ports. Lower is better for the latencies (ms), higher for
the rates (/s); noisy_neighbor runs once, its reference runs after each of its rounds
(--noisy-reference), and its figures are those of bench/noisy_neighbor.py.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_LINE = re.compile(r'^\s+run \d+/\d+ (osbq|2x2)\s+([\d.]+) cycles/s\s+p50\s+([\d.]+) ms\s+'
                      r'p99\s+([\d.]+) ms')
VALUE_LINE = re.compile(r'^\s*(?:(current|reference) )?([a-z_0-9]+)=([-\d.]+)$')
HOL_KEYS = ('quiet_p50_ms', 'quiet_p99_ms', 'burst_p50_ms', 'burst_p99_ms', 'burst_per_s')


def run_bench(tree, args, log):
    cmd = [os.path.join(tree, 'bench', 'run.sh')] + args
    print('$ (cd %s && %s)' % (tree, ' '.join(cmd)), flush=True)
    out = subprocess.run(cmd, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=3600, check=False)
    log.write(out.stdout)
    if out.returncode != 0:
        sys.exit('bench/run.sh failed in %s (status %d); see the log' % (tree, out.returncode))
    return out.stdout


def figures_of(text):
    """The lifecycle runs' rates and latencies and hol's values, by name."""
    got = {}
    for line in text.splitlines():
        m = RUN_LINE.match(line)
        if m:
            shape = '1x1' if m.group(1) == 'osbq' else '2x2'
            for name, value in zip(('cycles_per_s', 'p50_ms', 'p99_ms'), m.group(2, 3, 4)):
                got.setdefault('lifecycle_%s_%s' % (shape, name), []).append(float(value))
            continue
        m = VALUE_LINE.match(line)
        if m and m.group(2) in HOL_KEYS and m.group(1) is None:
            got.setdefault('hol_' + m.group(2), []).append(float(m.group(3)))
    return got


def noisy_figures(text):
    """noisy_neighbor's figures by side (current, reference) and name."""
    got = {'current': {}, 'reference': {}}
    for line in text.splitlines():
        m = re.match(r'^\s*(current|reference) (.*)$', line)
        for name, value in re.findall(r'([a-z_0-9]+)=(-?[\d.]+)\b', m.group(2) if m else ''):
            got[m.group(1)].setdefault(name, []).append(float(value))
    return got


def table(rows):
    print('%-44s %12s %12s %7s' % ('figure (median)', 'this tree', 'reference', 'ratio'))
    for name, new, ref in rows:
        if not new or not ref:
            continue
        a, b = statistics.median(new), statistics.median(ref)
        ratio = '%.3f' % (a / b) if b else '-'
        print('%-44s %12.3f %12.3f %7s  (%d / %d runs)' % (name, a, b, ratio, len(new),
                                                           len(ref)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('reference', help='a checkout (worktree) of the reference commit')
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--duration', type=int, default=10, help="lifecycle's seconds a run")
    parser.add_argument('--cases', default='lifecycle,long_ops',
                        help='the cases run alternately: lifecycle, long_ops (its hol phase), '
                             'or both')
    parser.add_argument('--hol-scale', default='0.2', help="long_ops' --long-ops-scale")
    parser.add_argument('--noisy-count', type=int, default=160,
                        help="noisy_neighbor's --noisy-count; 0: no noisy_neighbor")
    parser.add_argument('--this-env', action='append', default=[], metavar='OSBQ_NAME=VALUE',
                        help="a setting for this tree's stacks only (bench/run.sh --env)")
    parser.add_argument('--log',
                        default=os.path.join(tempfile.gettempdir(), 'osbq-side-by-side.log'),
                        help='every run\'s whole output')
    args = parser.parse_args()
    ref = os.path.abspath(args.reference)
    common = ['--runs', '1', '--duration', str(args.duration), '--cases', args.cases,
              '--long-ops-phases', 'hol', '--long-ops-scale', args.hol_scale]
    new_fig, ref_fig = {}, {}
    with open(args.log, 'w') as log:
        for _ in range(args.rounds):
            this_env = [word for setting in args.this_env for word in ('--env', setting)]
            for tree, into, extra in ((TOP, new_fig, this_env), (ref, ref_fig, [])):
                for name, values in figures_of(run_bench(tree, common + extra, log)).items():
                    into.setdefault(name, []).extend(values)
        noisy = {'current': {}, 'reference': {}}
        if args.noisy_count > 0:
            noisy = noisy_figures(run_bench(TOP, [
                '--runs', str(args.rounds), '--cases', 'noisy_neighbor', '--noisy-count',
                str(args.noisy_count), '--noisy-window', '0', '--noisy-reference',
                os.path.join(ref, 'build-bench')], log))
    print('\nthis tree: %s%s; reference: %s; %d rounds, alternating' % (
        TOP, ''.join(' ' + setting for setting in args.this_env), ref, args.rounds))
    table([(name, new_fig[name], ref_fig.get(name)) for name in sorted(new_fig)])
    table([('noisy_' + name, values, noisy['reference'].get(name))
           for name, values in sorted(noisy['current'].items())])


if __name__ == '__main__':
    main()
