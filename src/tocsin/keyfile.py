"""Where a process finds the key ring for the secrets its database keeps: `TOCSIN_SECRET_KEY`,
else, on SQLite, the key file beside the database file (`tocsin.db.key`).

`tocsin serve` on loopback makes that file on its first start, so that `make run` needs
nothing: a fresh key, written readable by its owner only (0600) and linked into place
atomically, so two processes starting at once end up with the one key. Every later process
on that database file reads it. PostgreSQL has no such file: its processes run on many
machines, and a key kept beside the data would protect nothing.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from tocsin.errors import SecretKeyMissing
from tocsin.keyring import MISSING, SETTING, Keyring, new_key
from tocsin.settings import Settings
from tocsin.store.sqlite.engine import SqliteUrl

log = logging.getLogger("tocsin.keys")
KEY_FILE_SUFFIX = ".key"


def key_file_for(database_url: str) -> Path | None:
    """The key file beside an SQLite database (`tocsin.db` → `tocsin.db.key`); None on
    PostgreSQL."""
    if not database_url.startswith("sqlite:"):
        return None
    return Path(SqliteUrl.parse(database_url).path + KEY_FILE_SUFFIX)


def load_keyring(settings: Settings, *, make: bool = False) -> tuple[Keyring, bool]:
    """The key ring this process seals and opens stored secrets with, and whether this call
    made the key file (only when `make`, on SQLite, with no key set and no file yet).
    `SecretKeyMissing` names the setting and what to do when there is none."""
    if settings.secret_key is not None and settings.secret_key.get_secret_value().strip():
        return Keyring.parse(settings.secret_key.get_secret_value()), False
    path = key_file_for(settings.database_url)
    if path is None:
        raise SecretKeyMissing(MISSING)
    made = make and _make(path)
    if made:
        log.warning(
            "made a secret key for the secrets this database keeps (webhook and owner-token "
            "signing secrets) and kept it beside the database, readable by its owner only; "
            "back it up with the database: without it those secrets cannot be read",
            extra={"key_file": str(path)},
        )
    return _read(path), made


def _read(path: Path) -> Keyring:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SecretKeyMissing(
            f"{SETTING} is not set and there is no key file {path}: set it (make one with "
            "`tocsin keys secret-key`), or start `tocsin serve` on 127.0.0.1 once to make the file"
        ) from None
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        log.warning(
            "the secret key file is readable by others than its owner: chmod 600 it",
            extra={"key_file": str(path)},
        )
    return Keyring.parse(text, source=str(path))


def _make(path: Path) -> bool:
    """Write a fresh key to `path` unless a key is there already; whether it was written."""
    if path.exists():
        return False
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(descriptor, 0o600)  # exactly owner-only, whatever the umask leaves
        with os.fdopen(descriptor, "w") as file:
            file.write(new_key() + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, path)  # atomic, and never replaces a key made meanwhile
        except FileExistsError:
            return False
    finally:
        temporary.unlink(missing_ok=True)
    return True
