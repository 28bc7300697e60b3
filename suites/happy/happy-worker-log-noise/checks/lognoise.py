#!/usr/bin/env python3
import re, sys
src = open("src/billing_worker.py").read()
loop = src.split("while True:", 1)[1] if "while True:" in src else ""
bad = []
if re.search(r"log\.info\(", loop):
    bad.append("INFO logging inside the polling loop")
if "handle(m)" not in loop:
    bad.append("the loop no longer handles messages")
ini = open("config/logging.prod.ini").read()
m = re.search(r"\[logger_billing\][^\[]*?level=(\w+)", ini)
if not m or m.group(1) != "WARNING":
    bad.append("logger_billing level is not WARNING")
print("\n".join(bad) or "quiet")
sys.exit(1 if bad else 0)
