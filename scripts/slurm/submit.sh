#!/usr/bin/env bash
# Submit a racksweep sweep to Slurm: an array job with one shard per task, then a merge job that
# starts only when every shard succeeded (--dependency=afterok).
#
#   scripts/slurm/submit.sh [-c CPUS] [-j MAX_RUNNING] SWEEP.toml OUT_DIR [TASKS] [-- SBATCH_ARGS...]
#
#   -c CPUS         CPUs (and racksweep threads) per task [1, or $RACKSWEEP_CPUS_PER_TASK]
#   -j MAX_RUNNING  at most this many tasks at once (--array=0-(N-1)%MAX_RUNNING)
#   TASKS           number of shards N; default: one per 50 million configurations per CPU
#                   (a few minutes per task), at least 1, at most the grid size
#   SBATCH_ARGS     passed to both sbatch calls: --partition, --account, --time, --qos, --mem...
#                   (sbatch's own SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT... work too)
#
# Environment: RACKSWEEP_BIN (the binary; default: racksweep on PATH, else the repository's
# ${CARGO_TARGET_DIR:-target}/release/racksweep), RACKSWEEP_RUN_ARGS (more arguments for
# `racksweep run` in every task, e.g. "--feasible-only --max-configs 20000000000"; grids above a
# billion configurations need that --max-configs), RACKSWEEP_CONFIGS_PER_TASK (the default TASKS
# heuristic, per CPU).
#
# Writes OUT_DIR/<sweep name>/ (the run directory), OUT_DIR/slurm/<sweep name>-<hash>.toml (the
# sweep as submitted: tasks read this copy, so editing the original while the array waits in the
# queue changes nothing) and OUT_DIR/slurm/logs/ (one log per task and one for the merge).
# OUT_DIR must be on a filesystem shared with the compute nodes.
#
# Prints array_job_id=<id>, merge_job_id=<id> and run_dir=<path> on stdout; everything else goes
# to stderr.
# Submitting again with the same arguments after a partial failure reruns only the shards that
# did not complete (the tasks run with --resume).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
    sed -n '5,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
die() {
    echo "submit.sh: error: $*" >&2
    exit 1
}

cpus=${RACKSWEEP_CPUS_PER_TASK:-1}
throttle=
while getopts ':c:j:h' opt; do
    case $opt in
        c) cpus=$OPTARG ;;
        j) throttle=$OPTARG ;;
        h) usage ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))

# Positional arguments up to an optional "--"; everything after it goes to sbatch.
positional=()
while [[ $# -gt 0 && $1 != -- ]]; do
    positional+=("$1")
    shift
done
[[ $# -gt 0 ]] && shift # the "--"
extra=("$@")
[[ ${#positional[@]} -ge 2 && ${#positional[@]} -le 3 ]] || usage
sweep_arg=${positional[0]}
out_arg=${positional[1]}
tasks=${positional[2]:-}

[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "-c wants a positive integer, got '$cpus'"
[[ -z $throttle || $throttle =~ ^[1-9][0-9]*$ ]] || die "-j wants a positive integer, got '$throttle'"
[[ -z $tasks || $tasks =~ ^[1-9][0-9]*$ ]] || die "TASKS wants a positive integer, got '$tasks'"
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm login node"

# The binary, as an absolute path: the tasks run it from their own working directory.
if [[ -n ${RACKSWEEP_BIN:-} ]]; then
    bin=$RACKSWEEP_BIN
elif command -v racksweep >/dev/null; then
    bin=$(command -v racksweep)
else
    target=${CARGO_TARGET_DIR:-$repo/target}
    [[ $target = /* ]] || target=$repo/$target
    bin=$target/release/racksweep
fi
[[ $bin = */* ]] || bin=$(command -v "$bin" || true)
[[ -n $bin && -x $bin ]] ||
    die "racksweep binary not found or not executable: '${bin}' (build with cargo build --release, or set RACKSWEEP_BIN)"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[[ $bin != *,* ]] || die "the binary's path must not contain a comma (sbatch --export): '$bin'"

[[ -f $sweep_arg && -r $sweep_arg ]] || die "cannot read sweep file '$sweep_arg'"
sweep_src=$(cd "$(dirname "$sweep_arg")" && pwd)/$(basename "$sweep_arg")

# Validate the sweep here, on the login node, rather than in N tasks; read its name and grid size
# from the check summary ("sweep: NAME (FILE)" ... "configurations: 3,168"). The tasks will apply
# the same --max-configs as RACKSWEEP_RUN_ARGS gives, so the check does too.
read -ra run_args <<<"${RACKSWEEP_RUN_ARGS:-}"
check_args=()
for ((i = 0; i < ${#run_args[@]}; i++)); do
    case ${run_args[i]} in
        --max-configs) check_args=(--max-configs "${run_args[i + 1]:-}") ;;
        --max-configs=*) check_args=("${run_args[i]}") ;;
    esac
done
check_out=$("$bin" check ${check_args[@]+"${check_args[@]}"} "$sweep_src" 2>&1) || {
    printf '%s\n' "$check_out" >&2
    die "racksweep check rejected '$sweep_arg'"
}
name=$(printf '%s\n' "$check_out" | sed -n '1s/^sweep: \(.*\) (.*)$/\1/p')
if [[ -z $name ]]; then
    # Fallback: the name key of the [sweep] table.
    name=$(awk '
        /^[[:space:]]*\[/ { in_sweep = ($0 ~ /^[[:space:]]*\[[[:space:]]*sweep[[:space:]]*\]/); next }
        in_sweep && /^[[:space:]]*name[[:space:]]*=/ {
            sub(/^[^=]*=[[:space:]]*/, "")
            if (match($0, /^"[^"]*"/) || match($0, /^\047[^\047]*\047/)) { print substr($0, 2, RLENGTH - 2); exit }
        }' "$sweep_src")
fi
[[ -n $name && $name != */* ]] || die "could not read the sweep name of '$sweep_arg'"
[[ $name != slurm ]] || die "a sweep named 'slurm' would collide with OUT_DIR/slurm/ (the logs): rename it"
configs=$(printf '%s\n' "$check_out" | sed -n 's/^configurations: *\([0-9,]*\).*/\1/p' | tr -d , | head -n 1)

if [[ -z $tasks ]]; then
    [[ -n $configs ]] || die "could not read the grid size from 'racksweep check'; pass TASKS"
    per_task=$((${RACKSWEEP_CONFIGS_PER_TASK:-50000000} * cpus))
    tasks=$(((configs + per_task - 1) / per_task))
    ((tasks <= configs)) || tasks=$configs
    ((tasks >= 1)) || tasks=1
fi

# Slurm rejects array indices >= MaxArraySize (1001 by default).
max_array=$(scontrol show config 2>/dev/null | awk '$1 == "MaxArraySize" { print $3 }' || true)
if [[ $max_array =~ ^[0-9]+$ ]] && ((tasks > max_array)); then
    die "$tasks tasks exceed this cluster's MaxArraySize ($max_array): pass TASKS <= $max_array, or raise -c"
fi

mkdir -p "$out_arg"
out=$(cd "$out_arg" && pwd)
# racksweep keeps the sweep in the run directory and refuses shards of any other sweep: say so
# now rather than in every task.
if [[ -f $out/$name/sweep.toml ]] && ! cmp -s "$out/$name/sweep.toml" "$sweep_src"; then
    die "$out/$name holds a run of a different version of sweep '$name'; use another OUT_DIR, or remove that run directory to start over"
fi
logs=$out/slurm/logs
mkdir -p "$logs"

# Content-addressed copy of the sweep: a resubmission of the same sweep reuses it.
hash=$(sha256sum "$sweep_src" | cut -c1-12)
sweep=$out/slurm/$name-$hash.toml
[[ -f $sweep ]] || cp "$sweep_src" "$sweep"

array_spec=0-$((tasks - 1))${throttle:+%$throttle}
common=(--parsable --export="ALL,RACKSWEEP_BIN=$bin")

array_id=$(sbatch "${common[@]}" --array="$array_spec" --cpus-per-task="$cpus" \
    --job-name="racksweep-$name" --output="$logs/%x-%A_%a.out" \
    ${extra[@]+"${extra[@]}"} "$here/sweep.sbatch" "$sweep" "$out" "$tasks")
array_id=${array_id%%;*} # --parsable prints "id" or "id;cluster"
[[ $array_id =~ ^[0-9]+$ ]] || die "unexpected sbatch output for the array job: '$array_id'"

# --kill-on-invalid-dep: if a shard fails for good, cancel the merge instead of leaving it
# pending forever (DependencyNeverSatisfied).
merge_id=$(sbatch "${common[@]}" --dependency="afterok:$array_id" --kill-on-invalid-dep=yes \
    --job-name="racksweep-merge-$name" --output="$logs/%x-%j.out" \
    ${extra[@]+"${extra[@]}"} "$here/merge.sbatch" "$out/$name")
merge_id=${merge_id%%;*}
[[ $merge_id =~ ^[0-9]+$ ]] || die "unexpected sbatch output for the merge job: '$merge_id' (array job $array_id is queued)"

cat >&2 <<EOF
submitted '$name' (${configs:-?} configurations): array job $array_id with $tasks task(s) of $cpus CPU(s), merge job $merge_id
  run directory:  $out/$name
  logs:           $logs
  progress:       squeue -j $array_id,$merge_id
                  sacct -j $array_id,$merge_id -X --format=JobID%20,JobName%30,State,Elapsed,ExitCode
  results:        $out/$name/pareto.md once job $merge_id completed
EOF
echo "array_job_id=$array_id"
echo "merge_job_id=$merge_id"
echo "run_dir=$out/$name"
