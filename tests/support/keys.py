"""The secret key every test process and store uses (`TOCSIN_SECRET_KEY`): fixed, so that a
store a test opens and the processes it starts open each other's secrets."""

from __future__ import annotations

from tocsin.keyring import Keyring

TEST_SECRET_KEY = "dGVzdHMtb25seS1zZWNyZXQta2V5LTMyLWJ5dGVzISE"  # 32 bytes, tests only
TEST_KEYRING = Keyring.parse(TEST_SECRET_KEY)
