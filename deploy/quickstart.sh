#!/usr/bin/env bash
# Install egis and run it on SQLite (no database server needed), in the background:
#
#   bash deploy/quickstart.sh [--port N] [--foreground] [--skip-install]
#   bash deploy/quickstart.sh --stop
#
# Creates .venv (unless there is one) and installs requirements.txt into it; creates or upgrades
# the schema in instance/egis.sqlite3 (or DATABASE_URL); on the first run, a demo site
# "localhost" with a write key and a server key, printed once; then starts gunicorn and returns
# as soon as egis answers, saying where it runs, how to try it and how to stop it.
#
#   --port N        listen on 127.0.0.1:N; without it: GUNICORN_BIND (host:port or unix:/path)
#                   if set, else 127.0.0.1 on PORT if set, else 127.0.0.1:8000
#   --stop          stop the server this script started (by the PID in its PID file)
#   --foreground    run gunicorn in this terminal instead, until Ctrl-C
#   --skip-install  use .venv as it is (the tests run the script in the project's virtualenv)
#
# The PID file and the log are instance/egis.pid and instance/egis.log (EGIS_QUICKSTART_DIR
# names another directory). GUNICORN_WORKERS (2 here) and the other GUNICORN_* variables work
# as in deploy/gunicorn.conf.py.
#
# egis is exposed only behind the shipped nginx (deploy/nginx.conf), which reads each request
# whole: reached directly, gunicorn is held by a few clients that send their headers slowly
# (slow loris). So the quickstart listens on 127.0.0.1, and warns loudly when GUNICORN_BIND is
# neither a loopback address nor a Unix socket.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    echo "It listens on 127.0.0.1: egis is exposed only behind the shipped nginx (deploy/nginx.conf)." >&2
    exit 2
}
port="" foreground="" skip_install="" stop=""
while [ $# -gt 0 ]; do
    case "$1" in
        --port) [ $# -ge 2 ] || usage; port="$2"; shift 2 ;;
        --port=*) port="${1#--port=}"; shift ;;
        --stop) stop=1; shift ;;
        --foreground) foreground=1; shift ;;
        --skip-install) skip_install=1; shift ;;
        -h|--help) usage ;;
        *) echo "unknown option: $1" >&2; usage ;;
    esac
done
if [ -z "$port" ] && [ -z "${GUNICORN_BIND:-}" ]; then
    port="${PORT:-8000}"
fi
if [ -n "$port" ] && ! [[ "$port" =~ ^[0-9]+$ && "$port" -ge 1 && "$port" -le 65535 ]]; then
    echo "the port must be a number from 1 to 65535, not '$port'" >&2
    exit 2
fi

run_dir="${EGIS_QUICKSTART_DIR:-instance}"
pid_file="$run_dir/egis.pid"
log_file="$run_dir/egis.log"
flask=.venv/bin/flask
export FLASK_APP=wsgi.py

# The PID in the PID file, if that process is still a gunicorn (a stale file's PID may have
# been given to another process since).
running_pid() {
    local pid
    [ -f "$pid_file" ] || return 1
    pid="$(tr -dc '0-9' <"$pid_file")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    if [ -r "/proc/$pid/cmdline" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q gunicorn; then
        return 1
    fi
    echo "$pid"
}

key_help() {
    cat <<EOF
Keys: whole keys are shown only when made (egis keeps their hashes). To list the demo site's
keys (id, hint, kind):    $flask keys list localhost
To make a new one:        $flask keys create localhost --kind write   (or --kind server)
To revoke one:            $flask keys revoke ID
For an agent (docs/AGENTS.md), a read key, which reads and cannot track:
                          $flask keys create localhost --kind read
or, for Claude's or ChatGPT's app (OAuth), a one-time connect code:
                          $flask agents connect localhost
EOF
}

if [ -n "$stop" ]; then
    if ! pid="$(running_pid)"; then
        echo "egis is not running (no live server in $pid_file)."
        rm -f "$pid_file"
        exit 0
    fi
    kill -TERM "$pid"
    for _ in $(seq 1 300); do  # gunicorn lets requests finish for up to 20 s
        kill -0 "$pid" 2>/dev/null || { echo "egis (PID $pid) stopped."; exit 0; }
        sleep 0.1
    done
    echo "egis (PID $pid) is still stopping; see $log_file" >&2
    exit 1
fi

if [ -z "$skip_install" ]; then
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi

"$flask" db upgrade
sites="$("$flask" sites list)"
if ! grep -qE "^localhost([[:space:]]|$)" <<<"$sites"; then
    "$flask" sites create localhost --plan standard
    write_key="$("$flask" keys create localhost --kind write | tail -n 1)"
    echo "write key:  $write_key"
    echo "server key: $("$flask" keys create localhost --kind server | tail -n 1)"
    echo "(shown only now: keep them)"
else
    write_key=""
    echo "The demo site localhost is already set up; its keys were printed when they were made."
fi
key_help

if [ -n "$port" ]; then
    export GUNICORN_BIND="127.0.0.1:$port"
fi
export GUNICORN_WORKERS="${GUNICORN_WORKERS:-2}"
case "$GUNICORN_BIND" in
    unix:*) url="" ;;
    *) url="http://$GUNICORN_BIND" ;;
esac

# Other hosts reach egis through nginx only: say so loudly when they could reach gunicorn.
warn_if_reachable() {
    case "$GUNICORN_BIND" in
        unix:* | 127.* | localhost | localhost:* | "[::1]" | "[::1]:"*) return 0 ;;
    esac
    cat >&2 <<EOF

!!! WARNING: egis is to listen on $GUNICORN_BIND, which other hosts can reach.
!!! egis is exposed only behind the shipped nginx (deploy/nginx.conf): reached directly, a few
!!! clients that send their headers slowly hold all of gunicorn's threads and ingest stops.
!!! Put nginx in front, and GUNICORN_BIND on 127.0.0.1 or a Unix socket (README, "Deployment").

EOF
}

if pid="$(running_pid)"; then
    echo
    echo "egis is already running (PID $pid; its address is in $log_file)."
    echo "To start it again (on another port, say): bash deploy/quickstart.sh --stop, then run this again."
    exit 0
fi

warn_if_reachable
if [ -n "$foreground" ]; then
    echo "egis on ${url:-$GUNICORN_BIND}; Ctrl-C stops it."
    exec .venv/bin/gunicorn -c deploy/gunicorn.conf.py wsgi:app
fi

mkdir -p "$run_dir"
rm -f "$pid_file"
launch=(.venv/bin/gunicorn -c deploy/gunicorn.conf.py --pid "$pid_file" wsgi:app)
# A session of its own: closing this terminal or a Ctrl-C in it does not reach the server.
if command -v setsid >/dev/null; then launch=(setsid "${launch[@]}"); fi
"${launch[@]}" </dev/null >>"$log_file" 2>&1 &
started=$!

answers() {
    if [ -n "$url" ]; then
        .venv/bin/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "$url/healthz" >/dev/null 2>&1
    else
        [ -S "${GUNICORN_BIND#unix:}" ]
    fi
}
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
    if ! kill -0 "$started" 2>/dev/null; then
        echo "egis did not start; the end of $log_file:" >&2
        tail -n 15 "$log_file" >&2
        echo "(another server on ${GUNICORN_BIND}? pick another port: --port N)" >&2
        exit 1
    fi
    answers && [ -s "$pid_file" ] && break
    sleep 0.1
done
if ! answers; then
    echo "egis (PID $started) does not answer after 30 s; see $log_file" >&2
    exit 1
fi

echo
echo "egis is running on ${url:-$GUNICORN_BIND} (PID $(cat "$pid_file"), in $pid_file; log: $log_file)."
if [ -n "$url" ]; then
    echo "Try it:   curl -s $url/api/validate -H \"X-API-Key: ${write_key:-<the write key>}\""
fi
echo "Stop it:  bash deploy/quickstart.sh --stop   (or: kill $(cat "$pid_file"))"
echo "For other hosts: put the shipped nginx in front (deploy/nginx.conf; README, \"Deployment\")."
