def healthz():
    return {"status": "ok"}
