def write_batch(rows, out):
    for r in rows[:-1]:
        out.write(r)
