"""The webpush channel without a network: RFC 8291's worked example, subscription checks,
VAPID keys and settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.peers.webpush import Refused, decrypt
from tests.unit.channels.contacts import refusal, stored_or_field
from tocsin.channels import webpush
from tocsin.channels.webpush import b64decode, b64encode, validate_contact
from tocsin.clock import SystemClock
from tocsin.errors import InvalidInput
from tocsin.settings import Settings

# RFC 8291 section 5 and appendix A: "When I grow up, I want to be a watermelon".
RFC_PLAINTEXT = b"When I grow up, I want to be a watermelon"
RFC_AS_PRIVATE = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
RFC_UA_PRIVATE = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
RFC_UA_PUBLIC = (
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
)
RFC_AUTH = "BTBZMqHH6r4Tts7J_aSIgg"
RFC_SALT = "DGv6ra1nlYgDCS1FRnbzlw"
RFC_BODY = (
    "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmY"
    "WAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexS"
    "gSxsj_Qulcy4a-fN"
)


def _key(raw: str) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(int.from_bytes(b64decode(raw), "big"), ec.SECP256R1())


def test_encryption_gives_rfc_8291s_example_byte_for_byte() -> None:
    body = webpush.encrypt(
        RFC_PLAINTEXT,
        p256dh=b64decode(RFC_UA_PUBLIC),
        auth=b64decode(RFC_AUTH),
        salt=b64decode(RFC_SALT),
        sender=_key(RFC_AS_PRIVATE),
    )
    assert b64encode(body) == RFC_BODY


def test_the_test_receiver_decrypts_rfc_8291s_example_and_only_with_the_right_secret() -> None:
    key = _key(RFC_UA_PRIVATE)
    assert decrypt(b64decode(RFC_BODY), key=key, auth=b64decode(RFC_AUTH)) == RFC_PLAINTEXT
    with pytest.raises(Refused, match="does not decrypt"):
        decrypt(b64decode(RFC_BODY), key=key, auth=bytes(16))


def _keys() -> dict[str, str]:
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return {"p256dh": b64encode(point), "auth": b64encode(bytes(range(16)))}


def _contact(endpoint: str = "https://fcm.googleapis.com/fcm/send/abc", **keys: Any) -> Any:
    return {"subscription": {"endpoint": endpoint, "keys": _keys() | keys}}


def test_a_browsers_subscription_is_stored_flat_with_unpadded_keys() -> None:
    keys = _keys()
    padded = {"p256dh": keys["p256dh"] + "=", "auth": keys["auth"] + "=="}
    body = {
        "subscription": {
            "endpoint": "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
            "expirationTime": None,
            "keys": padded,
        }
    }
    assert validate_contact(body) == {
        "endpoint": "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
        **keys,
    }


@pytest.mark.parametrize(
    "endpoint", ["http://127.0.0.1:8080/push/1", "http://localhost/push", "http://[::1]:9/p"]
)
def test_http_is_allowed_for_loopback_hosts_only(endpoint: str) -> None:
    assert validate_contact(_contact(endpoint))["endpoint"] == endpoint


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({}, "subscription", "required"),
        ({"subscription": "https://x"}, "subscription", "an object"),
        ({**_contact(), "token": "x"}, "token", "unknown field"),
        ({"subscription": {"endpoint": "https://a.example/x"}}, "subscription.keys", "object"),
        (_contact(""), "subscription.endpoint", "required"),
        (_contact("http://push.example.com/x"), "subscription.endpoint", "https"),
        (_contact("ftp://push.example.com/x"), "subscription.endpoint", "https"),
        (_contact("/push/1"), "subscription.endpoint", "absolute"),
        (_contact("https://u:p@push.example.com/x"), "subscription.endpoint", "credentials"),
        (_contact("https://push.example.com:99999/x"), "subscription.endpoint", "not a URL"),
        (_contact("https://push.example.com/" + "x" * 2048), "subscription.endpoint", "2048"),
        (_contact(p256dh=""), "subscription.keys.p256dh", "required"),
        (_contact(p256dh="BC+/"), "subscription.keys.p256dh", "base64url"),
        (_contact(p256dh=b64encode(b"\x04" + bytes(63))), "subscription.keys.p256dh", "65"),
        (_contact(p256dh=b64encode(b"\x02" + bytes(32))), "subscription.keys.p256dh", "65"),
        (_contact(p256dh=b64encode(b"\x04" + bytes(64))), "subscription.keys.p256dh", "curve"),
        (_contact(auth=b64encode(bytes(15))), "subscription.keys.auth", "16"),
        (_contact(auth=7), "subscription.keys.auth", "required"),
    ],
)
def test_a_bad_subscription_is_refused_naming_the_field(body: Any, field: str, says: str) -> None:
    error = refusal(validate_contact, body)
    assert error.field == field
    assert says in error.message


@given(st.text(max_size=120))
def test_any_p256dh_is_either_a_point_or_refused_by_name(text: str) -> None:
    stored = stored_or_field(validate_contact, _contact(p256dh=text))
    if isinstance(stored, InvalidInput):
        assert stored.field == "subscription.keys.p256dh"
    else:
        assert len(b64decode(stored["p256dh"])) == 65


@given(st.text(max_size=80))
def test_any_endpoint_is_either_accepted_as_given_or_refused_by_name(text: str) -> None:
    for endpoint in (text, "https://" + text):
        stored = stored_or_field(validate_contact, _contact(endpoint))
        if isinstance(stored, InvalidInput):
            assert stored.field == "subscription.endpoint"
        else:
            assert stored["endpoint"] == endpoint


@given(st.binary(min_size=16, max_size=16))
def test_any_16_byte_auth_round_trips(auth: bytes) -> None:
    assert b64decode(validate_contact(_contact(auth=b64encode(auth)))["auth"]) == auth


def test_topic_is_32_base64url_characters_and_fixed_per_reminder() -> None:
    topic = webpush.topic("06h2hgqf2y7g8415ze4g")
    assert len(topic) == 32
    assert b64decode(topic)  # the URL-safe alphabet only
    assert topic == webpush.topic("06h2hgqf2y7g8415ze4g") != webpush.topic("06h2hgqf2y7g8415ze4h")


@pytest.mark.parametrize(
    ("endpoint", "aud"),
    [
        ("https://FCM.googleapis.com:443/fcm/send/x", "https://fcm.googleapis.com"),
        ("https://push.example.com:8443/p?x=1", "https://push.example.com:8443"),
        ("http://[::1]:8080/p", "http://[::1]:8080"),
    ],
)
def test_the_jwt_audience_is_the_endpoints_origin(endpoint: str, aud: str) -> None:
    assert webpush.audience(endpoint) == aud


def test_vapid_keys_load_raw_or_pem_and_errors_never_quote_them() -> None:
    private, public = webpush.new_vapid_keys()
    key = webpush.load_vapid_key(private)
    assert webpush.application_server_key(key) == public
    for pem_format in (
        serialization.PrivateFormat.PKCS8,
        serialization.PrivateFormat.TraditionalOpenSSL,
    ):
        pem = key.private_bytes(
            serialization.Encoding.PEM, pem_format, serialization.NoEncryption()
        ).decode()
        assert webpush.application_server_key(webpush.load_vapid_key(pem)) == public
    for bad in (private[:-2], "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----"):
        with pytest.raises(ValueError, match="tocsin keys vapid") as caught:
            webpush.load_vapid_key(bad)
        assert private[:-2] not in str(caught.value)


def test_build_needs_a_key_and_a_subject(tmp_path: Path) -> None:
    private, _ = webpush.new_vapid_keys()
    clock = SystemClock()
    assert webpush.build(Settings(), clock) is None
    with pytest.raises(ValueError, match="TOCSIN_VAPID_SUBJECT") as caught:
        webpush.build(Settings(vapid_private_key=private), clock)
    assert private not in str(caught.value)
    key_file = tmp_path / "vapid.pem"
    key_file.write_text(private)
    with pytest.raises(ValueError, match="not both"):
        webpush.build(
            Settings(
                vapid_private_key=private,
                vapid_private_key_file=key_file,
                vapid_subject="mailto:ops@example.com",
            ),
            clock,
        )


def test_the_subject_must_be_a_mailto_or_https_url() -> None:
    assert Settings(vapid_subject="https://tocsin.example.com").vapid_subject
    with pytest.raises(ValidationError, match="mailto: or https:"):
        Settings(vapid_subject="ops@example.com")


def test_the_private_key_setting_is_never_shown() -> None:
    private, _ = webpush.new_vapid_keys()
    settings = Settings(vapid_private_key=private)
    assert private not in repr(settings)
    assert private not in str(settings.model_dump())
