#!/usr/bin/env bash
# End-to-end test of scripts/slurm/ on a throwaway single-node Slurm cluster on this machine.
#
#   sudo scripts/slurm/local-cluster-test.sh [--slurm-only] [--keep] [SWEEP.toml]
#
# Runs as root on Debian 12 (also in a container without systemd). It:
#   1. installs slurm-wlm and munge with apt-get if they are missing;
#   2. starts its own munged, slurmctld and slurmd, with every socket, pid file, state directory,
#      log and the munge key in a fresh temporary directory (nothing under /etc is used or changed,
#      and a system Slurm/munge, if any, is left alone as long as it does not use ports 6817-6818);
#   3. waits for the node to be idle, then runs a 4-task array job and a dependent job;
#   4. (unless --slurm-only) submits SWEEP (default sweeps/quickstart.toml) in
#      RACKSWEEP_TEST_SHARDS shards (4) with scripts/slurm/submit.sh, waits for the array and the
#      dependent merge job, runs the same sweep in one process, and checks with
#      scripts/slurm/compare-runs.py (pyarrow, in a venv cached at ~/.cache/racksweep-venv) that
#      both runs hold the same rows and the same frontier; then requeues a finished task and
#      submits the sweep again, and checks that neither rewrote anything.
# On exit, success or failure, it cancels its jobs, stops the daemons it started (by pid) and
# removes its temporary directory (--keep keeps the directory, for its logs and outputs).
# Rerunnable: a previous run that was killed before it could clean up is cleaned up first.
#
# Environment:
#   RACKSWEEP_BIN           binary to test; default: cargo build --release, then
#                           ${CARGO_TARGET_DIR:-target}/release/racksweep
#   RACKSWEEP_TEST_SHARDS   array size of the sharded run [4]
#   RACKSWEEP_TEST_TIMEOUT  seconds to wait for the racksweep jobs [600]
#   RACKSWEEP_SLURM_PORT    slurmctld port; slurmd uses the next one [6817]
#   RACKSWEEP_VENV          venv with pyarrow [~/.cache/racksweep-venv]
#   RACKSWEEP_RUN_ARGS      extra arguments for racksweep run, in the tasks and the single run
#
# Exit status: 0 when everything passed, 1 with an "error:" line (and the Slurm logs) otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

slurm_only=false
keep=false
sweep=$repo/sweeps/quickstart.toml
for arg in "$@"; do
    case $arg in
        --slurm-only) slurm_only=true ;;
        --keep) keep=true ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "error: unknown option $arg (see --help)" >&2
            exit 2
            ;;
        *) sweep=$arg ;;
    esac
done
shards=${RACKSWEEP_TEST_SHARDS:-4}
job_timeout=${RACKSWEEP_TEST_TIMEOUT:-600}
ctld_port=${RACKSWEEP_SLURM_PORT:-6817}
slurmd_port=$((ctld_port + 1))
venv=${RACKSWEEP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/racksweep-venv}

# Every daemon is started with this variable set to the run's temporary directory; their children
# (slurmstepd) inherit it. It is how a later run finds and stops what a killed run left behind,
# without touching any process it did not start.
marker_var=RACKSWEEP_SLURM_TEST_DIR
# Temporary directories of runs in progress, one per line (removed from it when a run cleans up),
# and a lock held while a run is in progress: a second run refuses to start rather than taking the
# first one's daemons for leftovers.
registry=${TMPDIR:-/tmp}/racksweep-slurm-test.dirs
lock=${TMPDIR:-/tmp}/racksweep-slurm-test.lock

t_start=$SECONDS
timings=()
log() { printf '[%4ds] %s\n' $((SECONDS - t_start)) "$*" >&2; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}
# phase NAME START: record how long a phase took since START (a $SECONDS value).
phase() {
    timings+=("$(printf '%-28s %4ds' "$1" $((SECONDS - $2)))")
    log "$1: $((SECONDS - $2))s"
}

[[ $(id -u) -eq 0 ]] || die "run as root (it installs packages and runs slurmd, which must be root)"
[[ -f $sweep ]] || die "no sweep file '$sweep'"
sweep=$(cd "$(dirname "$sweep")" && pwd)/$(basename "$sweep")
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "RACKSWEEP_TEST_SHARDS must be a positive integer"

# --- processes and cleanup -----------------------------------------------------------------------

# pids_marked DIR: pids of the processes whose environment holds marker_var=DIR.
pids_marked() {
    local p pid env
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        # (kernel threads and processes that just exited have no readable environment)
        env=$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue
        [[ $'\n'$env$'\n' == *$'\n'"$marker_var=$1"$'\n'* ]] && echo "$pid"
    done
    return 0
}

# running PID: the process exists and is not a zombie (an orphan's zombie lingers until PID 1
# reaps it, and some container inits are slow to).
running() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}

# stop_pids WAIT_S PID...: SIGTERM, wait up to WAIT_S seconds, then SIGKILL.
stop_pids() {
    local wait_s=$1 pid i alive
    shift
    [[ $# -gt 0 ]] || return 0
    kill -TERM "$@" 2>/dev/null || true
    for ((i = 0; i < wait_s * 10; i++)); do
        alive=false
        for pid in "$@"; do running "$pid" && alive=true; done
        $alive || return 0
        sleep 0.1
    done
    kill -KILL "$@" 2>/dev/null || true
}

# Clean up after earlier runs that died without cleaning up (SIGKILL, machine time-out...).
cleanup_stale_runs() {
    [[ -f $registry ]] || return 0
    local old pids
    while IFS= read -r old; do
        [[ $old == */racksweep-slurm.* ]] || continue
        mapfile -t pids < <(pids_marked "$old")
        if [[ ${#pids[@]} -gt 0 ]]; then
            log "stopping ${#pids[@]} process(es) left by an earlier run in $old"
            stop_pids 5 "${pids[@]}"
        fi
        rm -rf "$old"
    done <"$registry"
    rm -f "$registry"
}

dir=
munged_pid=
ctld_pid=
slurmd_pid=
cleanup() {
    local rc=$? pids
    trap - EXIT INT TERM
    set +e
    if [[ $rc -ne 0 && -n $dir ]]; then dump_logs; fi
    if [[ -n $ctld_pid ]] && running "$ctld_pid"; then
        # Cancel our jobs first so that slurmstepd ends them cleanly.
        timeout 15 scancel --full --user=root 2>/dev/null
        for _ in $(seq 1 50); do
            [[ -z $(timeout 5 squeue -h -t R,CG -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    # (unquoted on purpose: a daemon that never started has an empty pid and no word)
    # shellcheck disable=SC2086
    stop_pids 10 $slurmd_pid $ctld_pid
    if [[ -n $dir ]]; then
        # Anything else the daemons started (a slurmstepd of a cancelled job).
        mapfile -t pids < <(pids_marked "$dir")
        stop_pids 5 "${pids[@]}"
    fi
    # shellcheck disable=SC2086
    stop_pids 5 $munged_pid
    if [[ -n $dir ]]; then
        if $keep; then
            log "kept $dir"
        else
            rm -rf "$dir"
        fi
        if [[ -f $registry ]]; then
            grep -vxF "$dir" "$registry" >"$registry.new"
            mv -f "$registry.new" "$registry"
            [[ -s $registry ]] || rm -f "$registry"
        fi
    fi
    if [[ ${#timings[@]} -gt 0 ]]; then
        printf 'timings:\n' >&2
        printf '  %s\n' "${timings[@]}" >&2
    fi
    if [[ $rc -eq 0 ]]; then
        log "PASS"
    else
        log "FAIL (exit $rc)"
    fi
    exit "$rc"
}

dump_logs() {
    local f
    echo "----- diagnostics ($dir) -----" >&2
    if [[ -n $ctld_pid ]] && running "$ctld_pid"; then
        timeout 10 sinfo -N -l >&2
        timeout 10 sinfo -R >&2
        timeout 10 squeue -t all -r -o '%.18i %.30j %.10T %.10M %R' >&2
    fi
    for f in "$dir"/log/* "$dir"/jobcomp.log "$dir"/jobs/*.out "$dir"/sharded/slurm/logs/*.out; do
        [[ -f $f ]] || continue
        echo "----- tail -n 40 $f" >&2
        # Known noise: Debian's Slurm 22.05 loads every MPI plugin at start and logs that PMIx is
        # missing (harmless with MpiDefault=none), and a fresh state directory has no state files.
        grep -vE 'pmix|PMIx|MPI: Cannot create context|state file|Trying backup state' "$f" |
            tail -n 40 >&2
    done
    echo "----- end of diagnostics -----" >&2
}

# --- install -------------------------------------------------------------------------------------

# apt_get ARGS...: quiet apt-get that shows its output only when it fails.
apt_get() {
    local out
    out=$(DEBIAN_FRONTEND=noninteractive apt-get -q "$@" 2>&1) || {
        printf '%s\n' "$out" | tail -n 30 >&2
        die "apt-get $* failed"
    }
}

install_packages() {
    local t=$SECONDS missing=() cmd
    for cmd in munged mungekey slurmctld slurmd sbatch; do
        command -v "$cmd" >/dev/null || missing+=("$cmd")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing slurm-wlm and munge (missing: ${missing[*]})"
        # Without recommends: 9 packages instead of 43 (no mail server, no X libraries). In a
        # container, policy-rc.d stops the packages from starting their own services.
        apt_get update
        apt_get install -y --no-install-recommends slurm-wlm munge
    fi
    phase "install slurm + munge" "$t"
}

# A venv with pyarrow for compare-runs.py, cached across runs.
setup_venv() {
    local t=$SECONDS
    if ! "$venv/bin/python" -c 'import pyarrow' 2>/dev/null; then
        log "creating $venv with pyarrow"
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        if ! python3 -m venv "$venv" 2>/dev/null; then
            # Debian's python3 needs python3-venv for ensurepip.
            apt_get install -y --no-install-recommends python3-venv
            python3 -m venv "$venv"
        fi
        "$venv/bin/pip" install -q --disable-pip-version-check pyarrow || die "pip install pyarrow failed"
    fi
    phase "venv with pyarrow" "$t"
}

# The racksweep binary: RACKSWEEP_BIN, or a release build of this repository.
find_racksweep() {
    local t=$SECONDS target help
    if [[ -n ${RACKSWEEP_BIN:-} ]]; then
        bin=$RACKSWEEP_BIN
    else
        target=${CARGO_TARGET_DIR:-$repo/target}
        [[ $target = /* ]] || target=$repo/$target
        log "cargo build --release (target dir $target)"
        (cd "$repo" && CARGO_TARGET_DIR=$target cargo build --release --locked --quiet) ||
            die "cargo build --release failed"
        bin=$target/release/racksweep
    fi
    [[ -x $bin ]] || die "racksweep binary '$bin' is missing or not executable"
    bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
    help=$("$bin" run --help) || die "'$bin run --help' failed"
    [[ $help == *--shard* ]] ||
        die "'$bin run' has no --shard option yet: this binary predates sharding (use --slurm-only to test Slurm alone)"
    phase "build racksweep" "$t"
}

# --- the cluster ---------------------------------------------------------------------------------

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_munge() {
    local t=$SECONDS i
    # 0711: clients need to reach the socket, nobody needs to list the directory.
    mkdir -m 0711 "$dir/munge"
    # A key of our own: munged refuses keys that others can read, and /etc/munge/munge.key (if
    # the package made one) belongs to the munge user.
    mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 0600 "$dir/munge/munge.key"
    # --force turns munged's permission checks on the directories above its key and socket into
    # warnings: not needed under /tmp, but a TMPDIR elsewhere may fail them. In the foreground,
    # munged logs to stderr.
    env "$marker_var=$dir" munged --force --foreground \
        --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
        >>"$dir/log/munged.out" 2>&1 9>&- &
    munged_pid=$!
    for ((i = 0; i < 100; i++)); do
        munge -n -S "$dir/munge/munge.socket" 2>/dev/null | unmunge -S "$dir/munge/munge.socket" >/dev/null 2>&1 &&
            break
        running "$munged_pid" || die "munged exited at start (see $dir/log/munged.out)"
        sleep 0.1
    done
    ((i < 100)) || die "munged does not answer on $dir/munge/munge.socket"
    phase "start munged" "$t"
}

write_slurm_conf() {
    local node cpus mem_kb mem_mb
    node=$(hostname -s)
    cpus=$(nproc)
    # 90% of the memory available now: slurmd drains a node that reports less than RealMemory.
    mem_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    mem_mb=$((mem_kb * 9 / 10 / 1024))
    cat >"$dir/slurm.conf" <<EOF
# Single-node test cluster written by scripts/slurm/local-cluster-test.sh
ClusterName=racksweep-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# Our munged's socket, for the daemons, the client commands and slurmstepd alike.
# cred_expire: a requeued job waits this long (default 120 s) before it may start again.
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=15
MpiDefault=none
# No cgroups (a container may not delegate them) and no systemd: plain process tracking.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No slurmdbd (so no sacct here); finished jobs stay visible to squeue/scontrol for MinJobAge
# seconds, and each one is recorded in JobCompLoc.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
MinJobAge=3600
SchedulerType=sched/backfill
# Schedule every second (defaults: 60 s main, 30 s backfill), so a requeued task starts as soon
# as it may.
SchedulerParameters=sched_interval=1,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# Trust the node line below rather than what slurmd detects (a container's view of the
# hardware can disagree with nproc).
SlurmdParameters=config_overrides
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    log "slurm.conf: node $node, $cpus CPUs, RealMemory=${mem_mb} MB, ports $ctld_port-$slurmd_port"
}

start_slurm() {
    local t=$SECONDS node state i
    node=$(hostname -s)
    port_free "$ctld_port" || die "port $ctld_port is in use (another slurmctld?); set RACKSWEEP_SLURM_PORT"
    port_free "$slurmd_port" || die "port $slurmd_port is in use (another slurmd?); set RACKSWEEP_SLURM_PORT"
    mkdir -p "$dir/state" "$dir/spool"
    # -D: stay in the foreground, so that $! is the daemon's pid (their logs go to $dir/log).
    env "$marker_var=$dir" slurmctld -D -f "$dir/slurm.conf" >>"$dir/log/slurmctld.out" 2>&1 9>&- &
    ctld_pid=$!
    for ((i = 0; i < 300; i++)); do
        timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && break
        running "$ctld_pid" || die "slurmctld exited at start"
        sleep 0.1
    done
    ((i < 300)) || die "slurmctld does not answer scontrol ping"
    phase "start slurmctld" "$t"

    t=$SECONDS
    env "$marker_var=$dir" slurmd -D -f "$dir/slurm.conf" >>"$dir/log/slurmd.out" 2>&1 9>&- &
    slurmd_pid=$!
    for ((i = 0; i < 600; i++)); do
        state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
        [[ $state == idle ]] && break
        running "$slurmd_pid" || die "slurmd exited at start"
        sleep 0.1
    done
    [[ $state == idle ]] || die "node $node is '$state', not idle, after 60 s"
    phase "start slurmd, node idle" "$t"
}

# --- jobs ----------------------------------------------------------------------------------------

terminal_states=" COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY PREEMPTED BOOT_FAIL DEADLINE "

# job_states ID...: "JOBID STATE" per job and per array task (finished ones included).
job_states() {
    local IFS=,
    timeout 10 squeue -h -r -t all -j "$*" -o '%i %T'
}

# wait_jobs TIMEOUT_S ID...: wait until every job (and array task) has finished, then require
# each one to have COMPLETED (exit code 0).
wait_jobs() {
    local limit=$1 deadline states line bad
    shift
    deadline=$((SECONDS + limit))
    while :; do
        states=$(job_states "$@") || states=
        if [[ -n $states ]]; then
            bad=false
            while read -r _ line; do
                [[ $terminal_states == *" $line "* ]] || bad=true
            done <<<"$states"
            $bad || break
        fi
        ((SECONDS < deadline)) || die "jobs $* not finished after ${limit}s:"$'\n'"$states"
        sleep 1
    done
    bad=$(awk '$2 != "COMPLETED"' <<<"$states")
    [[ -z $bad ]] || die "jobs did not complete:"$'\n'"$bad"
}

smoke_test() {
    local t=$SECONDS array dep k out
    mkdir -p "$dir/jobs"
    # shellcheck disable=SC2016 # expanded by the job, not here
    array=$(sbatch --parsable --array=0-3 --chdir="$dir/jobs" --output="$dir/jobs/smoke-%A_%a.out" \
        --wrap 'echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT"')
    dep=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --chdir="$dir/jobs" \
        --output="$dir/jobs/smoke-after-%j.out" --wrap 'echo after')
    wait_jobs 120 "$array" "$dep"
    for k in 0 1 2 3; do
        out=$(cat "$dir/jobs/smoke-${array}_$k.out" 2>/dev/null || true)
        [[ $out == "task $k of 4" ]] || die "array task $k printed '$out', not 'task $k of 4'"
    done
    [[ $(cat "$dir/jobs/smoke-after-$dep.out") == after ]] || die "the dependent job did not run"
    phase "smoke: array 0-3 + afterok" "$t"
}

# --- racksweep -----------------------------------------------------------------------------------

# submit: run submit.sh for the test sweep; sets array, merge and run.
submit() {
    local out
    out=$(RACKSWEEP_BIN=$bin "$here/submit.sh" "$sweep" "$dir/sharded" "$shards") || die "submit.sh failed"
    array=$(sed -n 's/^array_job_id=//p' <<<"$out")
    merge=$(sed -n 's/^merge_job_id=//p' <<<"$out")
    run=$(sed -n 's/^run_dir=//p' <<<"$out")
    [[ -n $array && -n $merge && -n $run ]] || die "submit.sh printed no job ids: $out"
}

racksweep_test() {
    local t=$SECONDS array merge run first k single before after restarts
    log "sharded run of $sweep: $shards tasks"
    submit
    wait_jobs "$job_timeout" "$array" "$merge"
    for k in $(seq 0 $((shards - 1))); do
        [[ -f $run/configs/part-$k-of-$shards.parquet ]] || die "missing $run/configs/part-$k-of-$shards.parquet"
    done
    grep -Eq '"complete": *true' "$run/manifest.json" || die "$run/manifest.json does not say complete"
    phase "sharded run + merge jobs" "$t"

    t=$SECONDS
    # Same extra arguments as the tasks (submit.sh passes RACKSWEEP_RUN_ARGS on to them).
    read -ra run_args <<<"${RACKSWEEP_RUN_ARGS:-}"
    "$bin" run "$sweep" --out "$dir/single" --quiet ${run_args[@]+"${run_args[@]}"} ||
        die "single-process racksweep run failed"
    single=$dir/single/$(basename "$run")
    phase "single-process run" "$t"

    t=$SECONDS
    "$venv/bin/python" "$here/compare-runs.py" "$run" "$single" || die "the sharded and single-process runs differ"
    phase "compare" "$t"

    # Requeue and resubmission must leave a complete run as it is: a task whose shard is
    # committed returns without writing, and the merge can run again.
    t=$SECONDS
    # (the inode number changes when a file is replaced, even within the same second)
    before=$(stat -c '%i %Y %s %n' "$run"/configs/*.parquet "$run"/parts/*)
    first=$array
    scontrol requeue "${first}_1" || die "scontrol requeue ${first}_1 failed"
    wait_jobs "$job_timeout" "$first"
    restarts=$(scontrol show job "${first}_1" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
    [[ $restarts == 1 ]] || die "task ${first}_1 did not run again after the requeue (Restarts=$restarts)"
    [[ $(grep -c '^racksweep shard' "$dir/sharded/slurm/logs/"*"-${first}_1.out") == 2 ]] ||
        die "the requeued task's log does not hold both runs (--open-mode=append)"
    submit
    wait_jobs "$job_timeout" "$array" "$merge"
    after=$(stat -c '%i %Y %s %n' "$run"/configs/*.parquet "$run"/parts/*)
    [[ $before == "$after" ]] || die "a requeue or a resubmission rewrote committed parts:"$'\n'"$before"$'\n'"$after"
    "$venv/bin/python" "$here/compare-runs.py" "$run" "$single" >/dev/null ||
        die "the sharded run differs from the single-process run after the requeue and the resubmission"
    phase "requeue + resubmit (no-op)" "$t"
}

# --- main ----------------------------------------------------------------------------------------

# fd 9 holds the lock until this script exits; the daemons must not inherit it (9>&- below), or a
# daemon left behind by a killed run would keep the next run from cleaning up after it.
exec 9>"$lock"
flock -n 9 || die "another local-cluster-test.sh is running (it holds $lock)"
cleanup_stale_runs
install_packages
if ! $slurm_only; then
    setup_venv
    find_racksweep
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/racksweep-slurm.XXXXXX")
echo "$dir" >>"$registry"
trap cleanup EXIT
trap 'echo "error: interrupted" >&2; exit 130' INT
trap 'echo "error: terminated" >&2; exit 143' TERM
mkdir -p "$dir/log"
chmod 0755 "$dir" # mktemp makes it 0700; munged checks the directories above its socket
export SLURM_CONF=$dir/slurm.conf
log "working directory $dir"

start_munge
write_slurm_conf
start_slurm
smoke_test
if $slurm_only; then
    log "--slurm-only: skipping the racksweep flow"
else
    racksweep_test
fi
