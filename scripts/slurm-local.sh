#!/usr/bin/env bash
# scripts/slurm-local.sh up|down|status [DIR] — a REAL single-node Slurm on localhost for the
# integration tests (tests/integration/slurm): Debian's slurm-wlm + munge (+ slurmdbd and a private
# MariaDB, so `sacct` gives ElapsedRaw and AllocTRES), 8 fake GPUs as GRES, no systemd.
# Everything (configs, munge key, sockets, PID files, logs, state, DB) lives under DIR
# (default $SLURM_DIR or /tmp/attune-slurm). Clients need `export SLURM_CONF=DIR/etc/slurm.conf`
# (`source DIR/env.sh`). up is idempotent (a no-op when the cluster is already up with the same
# settings); down stops exactly the daemons named by DIR/run/*.pid. Config keys: the Slurm docs
# (https://slurm.schedmd.com/slurm.conf.html, gres.conf.html, slurmdbd.conf.html, sacct.html).
# Knobs (environment): SLURM_ACCOUNTING=dbd|jobcomp (default dbd: slurmdbd + MariaDB, full sacct;
# jobcomp: no database, only `sacct -c`, no AllocTRES), SLURM_GPUS=8, SLURM_CPUS=$(nproc) (more than
# nproc adds SlurmdParameters=config_overrides), SLURM_CLUSTER=local, ports SLURMCTLD_PORT/
# SLURMD_PORT/SLURMDBD_PORT/SLURM_MYSQL_PORT (6817/6818/6819/3307; a second cluster needs others),
# SLURM_FRESH=1 (wipe state and database), SLURM_SKIP_INSTALL=1 (fail on missing packages instead
# of apt-get install), SLURM_UP_TIMEOUT=60 (seconds to wait for each daemon and the idle node).
# Fake GPUs: gres.conf must give File= paths (a count-only GPU GRES is dropped and the node drains);
# symlinks to /dev/null are accepted without warnings.
set -euo pipefail
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cmd="${1:-}"; shift || true
case "$cmd" in
  up) ;;
  down) ;;
  status)
    DIR="${1:-${SLURM_DIR:-/tmp/attune-slurm}}"
    [ -f "$DIR/etc/slurm.conf" ] || { echo "slurm-local: not set up in $DIR"; exit 1; }
    export SLURM_CONF="$DIR/etc/slurm.conf"
    scontrol ping && sinfo && squeue; exit $? ;;
  *) echo "usage: $0 up|down|status [DIR]" >&2; exit 2 ;;
esac

slurm_up() {
T_START=$(date +%s.%N)

DIR="${1:-${SLURM_DIR:-/tmp/attune-slurm}}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

ACCT="${SLURM_ACCOUNTING:-dbd}"
GPUS="${SLURM_GPUS:-8}"
NPROC="$(nproc)"
CPUS="${SLURM_CPUS:-$NPROC}"
CLUSTER="${SLURM_CLUSTER:-local}"
CTLD_PORT="${SLURMCTLD_PORT:-6817}"
D_PORT="${SLURMD_PORT:-6818}"
DBD_PORT="${SLURMDBD_PORT:-6819}"
MY_PORT="${SLURM_MYSQL_PORT:-3307}"
TIMEOUT="${SLURM_UP_TIMEOUT:-60}"
NODE=localhost

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '[slurm-up %6ss] %s\n' "$(elapsed "$T_START")" "$*"; }
die() { log "ERROR: $*"; for f in "$DIR"/log/*.log; do [ -f "$f" ] && { echo "--- tail $f"; tail -n 15 "$f"; }; done; exit 1; }

case "$ACCT" in dbd|jobcomp) ;; *) die "SLURM_ACCOUNTING must be dbd or jobcomp" ;; esac
# munged's socket path must fit in sun_path (108 bytes)
[ ${#DIR} -le 80 ] || die "DIR path too long for a unix socket path: $DIR"

# ---------------------------------------------------------------- 1. packages
PKGS=(munge slurmctld slurmd slurm-client)
[ "$ACCT" = dbd ] && PKGS+=(slurmdbd mariadb-server)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
T_INSTALL=$(date +%s.%N)
if [ ${#missing[@]} -gt 0 ]; then
  [ "${SLURM_SKIP_INSTALL:-0}" = 1 ] && die "missing packages: ${missing[*]}"
  echo "[slurm-up] installing: ${missing[*]}"
  # Debian postinsts try to start the daemons through invoke-rc.d; stop that (no systemd here,
  # and we start our own instances). Only create policy-rc.d if none exists, and remove it again.
  POLICY_CREATED=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; POLICY_CREATED=1
  fi
  trap '[ "$POLICY_CREATED" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || apt-get update
  apt-get install -y -qq --no-install-recommends "${missing[@]}" > "$DIR/apt-install.log" 2>&1 \
    || { tail -30 "$DIR/apt-install.log"; exit 1; }
  if [ "$POLICY_CREATED" = 1 ]; then rm -f /usr/sbin/policy-rc.d; POLICY_CREATED=0; fi
  INSTALL_S=$(elapsed "$T_INSTALL")
else
  INSTALL_S=0
fi
log "packages ready (install took ${INSTALL_S}s): $(dpkg-query -W -f='${Version}' slurmctld) slurm, $(dpkg-query -W -f='${Version}' munge) munge"

# ---------------------------------------------------------------- helpers
# pid_alive NAME -> 0 if DIR/run/NAME.pid names a live process whose command line mentions DIR
pid_alive() {
  local f="$DIR/run/$1.pid" p
  [ -s "$f" ] || return 1
  p=$(tr -dc '0-9' < "$f")
  [ -n "$p" ] && [ -d "/proc/$p" ] || return 1
  # our daemons all carry DIR in their argv or in the SLURM_CONF of their environment
  tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF "$DIR" && return 0
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qF "SLURM_CONF=$DIR/" && return 0
  return 1
}
wait_for() {  # wait_for DESCRIPTION COMMAND...   (WATCH=name: die at once if that daemon's PID dies)
  local what="$1"; shift; local t0 p; t0=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    [ $(( $(date +%s) - t0 )) -lt "$TIMEOUT" ] || die "timed out after ${TIMEOUT}s waiting for $what"
    if [ -n "${WATCH:-}" ] && [ -s "$DIR/run/$WATCH.pid" ]; then
      p=$(tr -dc '0-9' < "$DIR/run/$WATCH.pid")
      [ -d "/proc/$p" ] || die "$WATCH (pid $p) died while waiting for $what"
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------- 2. configs
ETC="$DIR/etc"
export SLURM_CONF="$ETC/slurm.conf"
NEW="$DIR/etc.new"; rm -rf "$NEW"; mkdir -p "$NEW"
mkdir -p "$DIR"/{run,log,state/ctld,state/d,munge,fakedev,jobs}
chmod 755 "$DIR" "$DIR/run"; chmod 700 "$DIR/munge"

REALMEM=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p'); REALMEM=${REALMEM:-1024}
EXTRA_NODE=""
[ "$CPUS" -gt "$NPROC" ] && EXTRA_NODE="SlurmdParameters=config_overrides"

GRES_NODE=""
if [ "$GPUS" -gt 0 ]; then
  for i in $(seq 0 $((GPUS - 1))); do ln -sfn /dev/null "$DIR/fakedev/gpu$i"; done
  GRES_NODE=" Gres=gpu:$GPUS"
fi

if [ "$ACCT" = dbd ]; then
  ACCT_CONF="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# the persistent connection to slurmdbd ignores AuthInfo: it takes its munge socket from here
AccountingStoragePass=$DIR/run/munge.socket.2
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5"
else
  ACCT_CONF="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi

cat > "$NEW/slurm.conf" <<EOF
# generated by slurm-up.sh — single-node Slurm on localhost, no systemd, no cgroups
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/run/munge.socket.2
SlurmctldPort=$CTLD_PORT
SlurmdPort=$D_PORT
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
Waittime=0
$ACCT_CONF
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
$EXTRA_NODE
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REALMEM$GRES_NODE State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

{ echo "AutoDetect=off"
  [ "$GPUS" -gt 0 ] && echo "NodeName=$NODE Name=gpu File=$DIR/fakedev/gpu[0-$((GPUS - 1))]"
  true; } > "$NEW/gres.conf"

if [ "$ACCT" = dbd ]; then
  cat > "$NEW/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$DIR/run/munge.socket.2
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MY_PORT
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$NEW/slurmdbd.conf"   # slurmdbd refuses a world-readable slurmdbd.conf
fi
printf 'export SLURM_CONF=%s\n' "$ETC/slurm.conf" > "$NEW/env.sh"

# any daemon of ours alive?
ANY_ALIVE=0
for d in munged mysqld slurmdbd slurmctld slurmd; do pid_alive $d && ANY_ALIVE=1; done
if [ -d "$ETC" ] && diff -r -q "$ETC" "$NEW" >/dev/null 2>&1; then
  rm -rf "$NEW"; log "configs unchanged ($ETC)"
else
  if [ "$ANY_ALIVE" = 1 ]; then
    log "configs changed while daemons run: restarting via slurm-down.sh"
    "$SELF" down "$DIR"
  fi
  rm -rf "$ETC"; mv "$NEW" "$ETC"; log "configs written to $ETC"
fi
cp "$ETC/env.sh" "$DIR/env.sh"

if [ "${SLURM_FRESH:-0}" = 1 ]; then
  for d in munged mysqld slurmdbd slurmctld slurmd; do pid_alive $d && { "$SELF" down "$DIR"; break; }; done
  rm -rf "$DIR/state" "$DIR/mysql" "$DIR/log"/*; mkdir -p "$DIR"/{state/ctld,state/d,log}
  log "SLURM_FRESH=1: state wiped"
fi

# ---------------------------------------------------------------- 3. daemons
# munge: private daemon, private key and socket
if ! pid_alive munged; then
  rm -f "$DIR/run/munged.pid" "$DIR/run/munge.socket.2" "$DIR/run/munge.socket.2.lock"
  [ -s "$DIR/munge/munge.key" ] || { mungekey --create --keyfile="$DIR/munge/munge.key" --bits=1024; chmod 600 "$DIR/munge/munge.key"; }
  munged --socket="$DIR/run/munge.socket.2" --key-file="$DIR/munge/munge.key" \
         --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
  log "munged started (pid $(cat "$DIR/run/munged.pid"))"
fi
wait_for munge bash -c "munge -n -S '$DIR/run/munge.socket.2' | unmunge -S '$DIR/run/munge.socket.2'"

if [ "$ACCT" = dbd ]; then
  if ! pid_alive mysqld; then
    rm -f "$DIR/run/mysqld.pid"
    if [ ! -d "$DIR/mysql/mysql" ]; then
      rm -rf "$DIR/mysql"; mkdir -p "$DIR/mysql"
      mariadb-install-db --no-defaults --datadir="$DIR/mysql" --user=root \
        --auth-root-authentication-method=socket --skip-test-db > "$DIR/log/mariadb-install.log" 2>&1 \
        || die "mariadb-install-db failed"
      NEW_DB=1
    fi
    setsid mariadbd --no-defaults --datadir="$DIR/mysql" --socket="$DIR/run/mysqld.sock" \
      --port="$MY_PORT" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$DIR/run/mysqld.pid" \
      --log-error="$DIR/log/mysqld.log" --user=root --innodb-buffer-pool-size=128M \
      --innodb-lock-wait-timeout=900 < /dev/null > /dev/null 2>&1 &
    WATCH=mysqld wait_for mariadb mariadb-admin --no-defaults -S "$DIR/run/mysqld.sock" -u root ping
    wait_for mysqld.pid test -s "$DIR/run/mysqld.pid"
    log "mariadbd started (pid $(cat "$DIR/run/mysqld.pid"), 127.0.0.1:$MY_PORT)"
  fi
  mariadb --no-defaults -S "$DIR/run/mysqld.sock" -u root -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "cannot create db user"
  if ! pid_alive slurmdbd; then
    rm -f "$DIR/run/slurmdbd.pid"
    slurmdbd || die "slurmdbd failed to start"      # reads $(dirname SLURM_CONF)/slurmdbd.conf
    wait_for slurmdbd.pid test -s "$DIR/run/slurmdbd.pid"
    log "slurmdbd started (pid $(cat "$DIR/run/slurmdbd.pid"), port $DBD_PORT)"
  fi
  WATCH=slurmdbd wait_for "slurmdbd answering" sacctmgr -n list cluster
fi

if ! pid_alive slurmctld; then
  rm -f "$DIR/run/slurmctld.pid"
  slurmctld -f "$SLURM_CONF" || die "slurmctld failed to start"
  log "slurmctld forked"
fi
# slurmctld daemonizes before it reads its state: a fatal error shows up only here
WATCH=slurmctld wait_for "slurmctld (scontrol ping)" bash -c "scontrol ping | grep -q UP"
log "slurmctld up (pid $(cat "$DIR/run/slurmctld.pid"), port $CTLD_PORT)"

if ! pid_alive slurmd; then
  rm -f "$DIR/run/slurmd.pid"
  slurmd -f "$SLURM_CONF" -N "$NODE" || die "slurmd failed to start"
  wait_for slurmd.pid test -s "$DIR/run/slurmd.pid"
  log "slurmd started (pid $(cat "$DIR/run/slurmd.pid"), port $D_PORT)"
fi

# wait for the node; clear a DRAIN/DOWN left over in saved state from an earlier run
t0=$(date +%s)
while :; do
  st=$(sinfo -h -n "$NODE" -o '%T' 2>/dev/null | head -1 || true)
  case "$st" in
    idle|mixed|allocated) break ;;
    drain*|drained|down*|inval*|fail*) scontrol update nodename="$NODE" state=resume 2>/dev/null || \
                                        scontrol update nodename="$NODE" state=idle 2>/dev/null || true ;;
  esac
  [ $(( $(date +%s) - t0 )) -lt "$TIMEOUT" ] || die "node $NODE not idle after ${TIMEOUT}s (state '$st')"
  pid_alive slurmd || die "slurmd died (state '$st')"
  pid_alive slurmctld || die "slurmctld died (state '$st')"
  sleep 0.3
done
sinfo
log "cluster '$CLUSTER' ready: node $NODE is $st, accounting=$ACCT, gpus=$GPUS"
echo "SLURM_UP_SECONDS=$(elapsed "$T_START") (install ${INSTALL_S}s)"
echo "use:  source $DIR/env.sh"
}

slurm_down() {
set +e
DIR="${1:-${SLURM_DIR:-/tmp/attune-slurm}}"
[ -d "$DIR" ] || { echo "[slurm-down] no such dir $DIR — nothing to do"; return 0; }
DIR="$(cd "$DIR" && pwd)"
export SLURM_CONF="$DIR/etc/slurm.conf"

ours() {  # ours PID -> 0 if the process belongs to this DIR
  local p="$1"
  [ -d "/proc/$p" ] || return 1
  tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF "$DIR" && return 0
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qF "SLURM_CONF=$DIR/" && return 0
  return 1
}
pid_of() { local f="$DIR/run/$1.pid"; [ -s "$f" ] && tr -dc '0-9' < "$f"; }

# 1. cancel remaining jobs while slurmctld still answers, and wait briefly for them to end
p=$(pid_of slurmctld || true)
if [ -n "$p" ] && ours "$p" && [ -f "$SLURM_CONF" ]; then
  jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    echo "[slurm-down] cancelling jobs: $jobs"
    scancel $jobs 2>/dev/null || true
    for _ in $(seq 1 40); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
fi

# 2. stop daemons in reverse start order, in three phases (each phase's daemons in parallel):
#    slurmd+slurmctld (slurmctld flushes accounting to slurmdbd on exit), slurmdbd, mariadbd+munged
rc=0
stop_phase() {
  local d p t0 pids=() names=()
  t0=$(date +%s.%N)
  for d in "$@"; do
    p=$(pid_of $d || true)
    [ -n "$p" ] || continue
    if ! ours "$p"; then
      echo "[slurm-down] $d: stale PID file (pid $p gone or not ours) — removing it"
      rm -f "$DIR/run/$d.pid"; continue
    fi
    kill -TERM "$p" 2>/dev/null && { pids+=("$p"); names+=("$d"); }
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  for _ in $(seq 1 150); do
    local alive=0; for p in "${pids[@]}"; do [ -d "/proc/$p" ] && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  local i
  for i in "${!pids[@]}"; do
    p=${pids[$i]}; d=${names[$i]}
    if [ -d "/proc/$p" ]; then
      echo "[slurm-down] $d (pid $p) ignored SIGTERM for 15s — SIGKILL"; kill -KILL "$p" 2>/dev/null; sleep 0.5
    fi
    if [ -d "/proc/$p" ]; then echo "[slurm-down] $d (pid $p) still alive!"; rc=1
    else echo "[slurm-down] stopped $d (pid $p)"; rm -f "$DIR/run/$d.pid"; fi
  done
  echo "[slurm-down]   phase '$*' took $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}')s"
}
stop_phase slurmd slurmctld
stop_phase slurmdbd
stop_phase mysqld munged
rm -f "$DIR/run/munge.socket.2" "$DIR/run/munge.socket.2.lock" "$DIR/run/mysqld.sock"
return $rc
}

if [ "$cmd" = up ]; then slurm_up "$@"; else slurm_down "$@"; fi
