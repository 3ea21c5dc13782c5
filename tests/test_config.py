"""Configuration from the environment (app.config): defaults, EGIS_* read as JSON where they
parse, DATABASE_URL as is, overrides last, and the key prefixes derived from KEY_PREFIX."""
from flask import Flask

from app import config


def _loaded(overrides=None) -> Flask:
    app = Flask("egis_config_test")
    config.load(app, overrides)
    return app


def test_defaults_apply_when_nothing_is_set(monkeypatch):
    monkeypatch.delenv("EGIS_SAMPLE_RATE", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    app = _loaded()
    assert app.config["SAMPLE_RATE"] == config.DEFAULTS["SAMPLE_RATE"] == 0.1
    assert app.config["DATABASE_URL"].startswith("sqlite:///")
    assert app.config["DATABASE_URL"].endswith("egis.sqlite3")
    assert app.config["WRITE_KEY_PREFIX"] == "egis_"


def test_egis_variables_are_read_as_json_when_they_parse(monkeypatch):
    monkeypatch.setenv("EGIS_TRUSTED_PROXIES", "1")
    monkeypatch.setenv("EGIS_GROUP_COMMIT", "false")
    monkeypatch.setenv("EGIS_PUBLIC_URL", "https://analytics.example.com")
    monkeypatch.setenv("DATABASE_URL", "postgresql://egis@db.example/egis")
    app = _loaded()
    assert app.config["TRUSTED_PROXIES"] == 1
    assert app.config["GROUP_COMMIT"] is False
    assert app.config["PUBLIC_URL"] == "https://analytics.example.com"
    assert app.config["DATABASE_URL"] == "postgresql://egis@db.example/egis"


def test_overrides_win_and_the_key_prefixes_follow_key_prefix(monkeypatch):
    monkeypatch.setenv("EGIS_KEY_PREFIX", '"env"')
    app = _loaded({"KEY_PREFIX": "acme", "SAMPLE_RATE": 0.5})
    assert app.config["SAMPLE_RATE"] == 0.5
    assert (app.config["WRITE_KEY_PREFIX"], app.config["SERVER_KEY_PREFIX"],
            app.config["READ_KEY_PREFIX"]) == ("acme_", "acmes_", "acmer_")
