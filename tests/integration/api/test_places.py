"""`/v1/owners/{owner}/places`: add, list (keyset pages, or the nearest to a point), read,
change, delete; validation as problem+json naming the field; apps are tenants, as with
contacts."""

from __future__ import annotations

import math

import httpx
from hypothesis import given
from hypothesis import strategies as st

from tests.integration.api.conftest import NOW, add_key, bearer, fields, owner_token, settings
from tocsin.api import create_app
from tocsin.api.places import edge_distance_m
from tocsin.clock import FakeClock
from tocsin.domain import Place
from tocsin.store import Store

HOME = {"name": "Home", "latitude": 52.5200, "longitude": 13.4050, "radius_m": 150}
OFFICE = {"name": "Office", "latitude": 52.5163, "longitude": 13.3777, "radius_m": 100}
FAR = {"name": "Grandma", "latitude": 48.1374, "longitude": 11.5755}  # Munich, 504 km away


async def test_a_place_is_added_read_changed_and_deleted(client: httpx.AsyncClient) -> None:
    made = await client.post("/v1/owners/ana/places", json=HOME)
    assert made.status_code == 201, made.text
    body = made.json()
    path = f"/v1/owners/ana/places/{body['id']}"
    assert made.headers["location"] == path
    assert {k: body[k] for k in HOME} == HOME
    assert body["owner"] == "ana"
    assert body["source"] is None

    assert (await client.get(path)).json() == body
    renamed = await client.patch(path, json={"name": "Flat", "radius_m": 200})
    assert renamed.status_code == 200, renamed.text
    assert (renamed.json()["name"], renamed.json()["radius_m"]) == ("Flat", 200)
    assert renamed.json()["latitude"] == HOME["latitude"]  # not given: kept
    assert (await client.delete(path)).status_code == 204
    assert (await client.delete(path)).status_code == 404
    assert (await client.get(path)).status_code == 404


async def test_a_radius_not_given_is_150_metres(client: httpx.AsyncClient) -> None:
    made = await client.post("/v1/owners/ana/places", json=FAR)
    assert made.json()["radius_m"] == 150


async def test_bad_places_are_refused_naming_the_field_and_nothing_is_saved(
    client: httpx.AsyncClient,
) -> None:
    cases = {
        "name": [{**HOME, "name": " "}, {**HOME, "name": "x" * 101}, {**HOME, "name": "a\x00"}],
        "latitude": [
            {**HOME, "latitude": 90.5},
            {**HOME, "latitude": "52.5"},
            {**HOME, "latitude": True},
        ],
        "longitude": [
            {**HOME, "longitude": -181},
            {k: v for k, v in HOME.items() if k != "longitude"},
        ],
        "radius_m": [
            {**HOME, "radius_m": 49},
            {**HOME, "radius_m": 100_001},
            {**HOME, "radius_m": 1.5},
        ],
        "colour": [{**HOME, "colour": "red"}],
    }
    for field, bodies in cases.items():
        for body in bodies:
            answer = await client.post("/v1/owners/ana/places", json=body)
            assert answer.status_code == 422, (field, body, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            assert fields(answer.json()) == [field], (field, answer.text)
    made = (await client.post("/v1/owners/ana/places", json=HOME)).json()
    path = f"/v1/owners/ana/places/{made['id']}"
    for patch, field in (({"latitude": None}, "latitude"), ({"radius_m": 10}, "radius_m")):
        answer = await client.patch(path, json=patch)
        assert answer.status_code == 422, answer.text
        assert fields(answer.json()) == [field]
    assert (await client.get(path)).json() == made
    assert [p["id"] for p in (await client.get("/v1/owners/ana/places")).json()["places"]] == [
        made["id"]
    ]


async def test_places_page_by_cursor(client: httpx.AsyncClient) -> None:
    made = [
        (await client.post("/v1/owners/ana/places", json={**HOME, "name": f"n{n}"})).json()
        for n in range(3)
    ]
    first = (await client.get("/v1/owners/ana/places?limit=2")).json()
    second = (
        await client.get(f"/v1/owners/ana/places?limit=2&cursor={first['next_cursor']}")
    ).json()
    assert [p["id"] for p in first["places"] + second["places"]] == sorted(p["id"] for p in made)
    assert second["next_cursor"] is None
    bad = await client.get("/v1/owners/ana/places?cursor=nope")
    assert bad.status_code == 422
    assert fields(bad.json()) == ["cursor"]


async def test_near_lists_the_nearest_first_with_the_distance_to_each_edge(
    client: httpx.AsyncClient,
) -> None:
    for body in (FAR, OFFICE, HOME):
        assert (await client.post("/v1/owners/ana/places", json=body)).status_code == 201
    # At home's centre: inside it (0), the office 1.9 km off less its 100 m, Munich far.
    near = await client.get("/v1/owners/ana/places?near=52.52,13.405&limit=2")
    assert near.status_code == 200, near.text
    listed = near.json()
    assert [p["name"] for p in listed["places"]] == ["Home", "Office"]
    assert listed["places"][0]["distance_m"] == 0
    assert 1_750 < listed["places"][1]["distance_m"] < 1_850
    assert listed["next_cursor"] is None
    everything = (await client.get("/v1/owners/ana/places?near=52.52,13.405")).json()
    assert 500_000 < everything["places"][2]["distance_m"] < 510_000
    for point in ("52.52", "north,east", "91,0", "0,181", "nan,0", "1,2,3"):
        answer = await client.get(f"/v1/owners/ana/places?near={point}")
        assert answer.status_code == 422, (point, answer.text)
        assert fields(answer.json()) == ["near"]


async def test_places_keep_to_their_owner_and_their_app(
    client: httpx.AsyncClient, store: Store
) -> None:
    x, y, token = (
        await add_key(store, "x"),
        await add_key(store, "y"),
        await owner_token(store, "ana"),
    )
    xs = (await client.post("/v1/owners/ana/places", json=HOME, headers=bearer(x))).json()
    own = (await client.post("/v1/owners/ana/places", json=OFFICE, headers=bearer(token))).json()
    path = f"/v1/owners/ana/places/{xs['id']}"

    async def seen(credential: str, query: str = "") -> list[str]:
        answer = await client.get(f"/v1/owners/ana/places{query}", headers=bearer(credential))
        return sorted(p["id"] for p in answer.json()["places"])

    assert xs["source"] == "x"
    assert own["source"] is None
    assert await seen(x) == [xs["id"]]
    assert await seen(y) == []
    assert await seen(y, "?near=52.52,13.405") == []
    assert await seen(token) == sorted([xs["id"], own["id"]])
    assert (await client.get(path, headers=bearer(y))).status_code == 404
    assert (await client.patch(path, json={"name": "mine"}, headers=bearer(y))).status_code == 404
    assert (await client.delete(path, headers=bearer(y))).status_code == 404
    bobs = await client.get("/v1/owners/bob/places", headers=bearer(token))
    assert bobs.status_code == 404  # an owner token sees its own owner only
    assert (
        await client.get(f"/v1/owners/bob/places/{xs['id']}", headers=bearer(x))
    ).status_code == 404
    assert (await client.delete(path, headers=bearer(token))).status_code == 204


async def test_each_app_saves_at_most_the_cap_of_places_for_an_owner(store: Store) -> None:
    capped = settings().model_copy(update={"max_places_per_owner": 2})
    app = create_app(store=store, settings=capped, clock=FakeClock(NOW))
    x, y = await add_key(store, "x"), await add_key(store, "y")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        xs = [
            await client.post("/v1/owners/ana/places", json=HOME, headers=bearer(x))
            for _ in range(3)
        ]
        ys = await client.post("/v1/owners/ana/places", json=HOME, headers=bearer(y))
    assert [a.status_code for a in xs] == [201, 201, 409]
    assert xs[2].json()["type"].endswith("too-many-places")
    assert "TOCSIN_MAX_PLACES_PER_OWNER" in xs[2].json()["detail"]
    assert ys.status_code == 201  # another app's count


def _place(latitude: float, longitude: float, radius_m: int) -> Place:
    return Place(
        id="p",
        owner="ana",
        shard=0,
        name="p",
        latitude=latitude,
        longitude=longitude,
        radius_m=radius_m,
        created_at=NOW,
        updated_at=NOW,
    )


latitudes = st.floats(min_value=-90, max_value=90)
longitudes = st.floats(min_value=-180, max_value=180)


@given(latitudes, longitudes, latitudes, longitudes, st.integers(50, 100_000))
def test_the_distance_to_an_edge_is_symmetric_bounded_and_zero_inside(
    lat1: float, lon1: float, lat2: float, lon2: float, radius: int
) -> None:
    there = edge_distance_m(_place(lat2, lon2, radius), lat1, lon1)
    back = edge_distance_m(_place(lat1, lon1, radius), lat2, lon2)
    assert math.isclose(there, back, abs_tol=0.2)  # the same great circle either way
    assert 0 <= there <= math.pi * 6_371_008.8  # at most half the earth round
    assert edge_distance_m(_place(lat1, lon1, radius), lat1, lon1) == 0


def test_distances_across_the_antimeridian_and_at_the_poles() -> None:
    # Either side of the date line, 0.2° apart at the equator: 22.2 km, not 40,000.
    assert 22_100 < edge_distance_m(_place(0, 179.9, 50), 0, -179.9) < 22_300
    # Every longitude is the same point at a pole.
    assert edge_distance_m(_place(90, 0, 50), 90, 120) == 0
