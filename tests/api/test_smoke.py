async def test_health(client):
    r = await client.get("/healthz")
    assert r.status_code == 200
    assert r.headers["X-Request-Id"]


async def test_create_and_get_category(org):
    r = await org.post("/categories", json={"name": "Billing & Payments"})
    assert r.status_code == 201, await r.get_data()
    body = (await r.get_json())["data"]
    assert body["slug"] == "billing-payments"
    r = await org.get(f"/categories/{body['id']}")
    assert r.status_code == 200
    assert (await r.get_json())["data"] == body
