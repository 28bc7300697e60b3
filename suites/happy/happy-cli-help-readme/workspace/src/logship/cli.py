"""logship: ship application logs to the central collector."""
import argparse
import sys


def build_parser():
    p = argparse.ArgumentParser(prog="logship", description="Ship log files to the collector.")
    p.add_argument("paths", nargs="+", help="log files or directories to ship")
    p.add_argument("--config", default="/etc/logship.toml", help="collector settings (default: %(default)s)")
    p.add_argument("--since", metavar="DURATION", help="only lines newer than this, e.g. 15m or 2h")
    p.add_argument("--follow", action="store_true", help="keep shipping lines as they are appended")
    p.add_argument("--max-batch", type=int, default=500, metavar="N",
                   help="send at most N lines per request (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true",
                   help="parse and batch the lines but send nothing; print what would be sent")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    print(f"would ship {len(args.paths)} path(s)" if args.dry_run else "shipping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
