#!/usr/bin/env bash
# Install egis and run it on SQLite (no database server needed): bash deploy/quickstart.sh
# Creates .venv, the schema in instance/egis.sqlite3, a demo site "localhost" with a write key
# and a server key (printed once), then serves on http://127.0.0.1:8000 until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
export FLASK_APP=wsgi.py
flask=.venv/bin/flask

"$flask" db upgrade
if ! "$flask" sites list | grep -q "^localhost"; then
    "$flask" sites create localhost --plan standard
    echo "write key:  $("$flask" keys create localhost --kind write | tail -n 1)"
    echo "server key: $("$flask" keys create localhost --kind server | tail -n 1)"
    echo "(keys are shown only now; '.venv/bin/flask keys create localhost --kind write' makes more)"
fi

export GUNICORN_BIND="${GUNICORN_BIND:-127.0.0.1:8000}"
export GUNICORN_WORKERS="${GUNICORN_WORKERS:-2}"
echo "egis on http://$GUNICORN_BIND (try: curl http://$GUNICORN_BIND/readyz)"
exec .venv/bin/gunicorn -c deploy/gunicorn.conf.py wsgi:app
