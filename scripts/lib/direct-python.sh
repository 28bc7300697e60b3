# Sourced by scripts/suite, scripts/test and .ci/run.
#
# The suites' checks and commands run `python3` hundreds of times. Where a
# version manager (pyenv, asdf) puts a shell-script shim first on PATH, each
# of those calls first runs bash and a dozen helper processes to choose the
# interpreter: measured on the suite at 3ae86ac, 42% of its CPU (30.7 s of
# CPU for one run per case with the pyenv shim, 17.9 s without). So the
# interpreter the shim chooses is resolved once, here, and its directory put
# first on PATH: every check then runs that very interpreter, directly. Where
# python3 is no shim (its directory is the interpreter's own), nothing changes.
if direct_python_dir=$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null) \
  && [ -n "$direct_python_dir" ] && [ -x "$direct_python_dir/python3" ] \
  && [ "$(dirname "$(command -v python3)")" != "$direct_python_dir" ]; then
  export PATH="$direct_python_dir:$PATH"
fi
unset direct_python_dir
