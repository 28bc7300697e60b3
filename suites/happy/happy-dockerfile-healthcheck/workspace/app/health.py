from app.main import app, db


@app.get("/livez")
def livez():
    """The process is up and serving: what a container HEALTHCHECK should probe."""
    return {"ok": True}


@app.get("/readyz")
def readyz():
    """Ready for traffic: checks the database, so it fails during a DB blip (not for restarts)."""
    db.execute("SELECT 1")
    return {"ok": True}
