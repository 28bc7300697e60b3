"""The monthly usage report mailed to each account owner."""


def build_report(account, rows):
    """rows: (day 'YYYY-MM-DD', service, units, cents). Returns the report text."""
    # aggregate
    by_service = {}
    days = set()
    total_cents = 0
    for day, service, units, cents in rows:
        if units < 0 or cents < 0:
            raise ValueError(f"negative usage on {day} for {service}")
        entry = by_service.setdefault(service, {"units": 0, "cents": 0})
        entry["units"] += units
        entry["cents"] += cents
        days.add(day)
        total_cents += cents
    busiest = max(by_service, key=lambda s: (by_service[s]["cents"], s)) if by_service else None
    # render
    lines = [f"Usage report for {account}", ""]
    if not by_service:
        lines.append("No usage this month.")
        return "\n".join(lines) + "\n"
    first, last = min(days), max(days)
    lines.append(f"Period: {first} to {last} ({len(days)} active days)")
    lines.append("")
    for service in sorted(by_service):
        e = by_service[service]
        lines.append(f"  {service:<12} {e['units']:>8} units  ${e['cents'] / 100:>9.2f}")
    lines.append("")
    lines.append(f"Total: ${total_cents / 100:.2f}")
    lines.append(f"Largest cost: {busiest}")
    return "\n".join(lines) + "\n"
