# Sourced first by the command scripts under bench/results/ that run on the GPU machine, from the
# repository root: refuses real oversubscription, starts the clock (T0), empties the records folder
# R=$OUT/records, packs it at exit if it is still there, builds deepum's native parts there (logs
# kept only where a build fails) and defines run_tests.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
# A script cut short (its time limit) still returns the records it wrote, as one archive; a script
# that packs and removes $R itself leaves nothing for this.
pack_records_at_exit() { [ -d "$R" ] && tar -czf "$OUT/records_at_exit.tgz" -C "$OUT" records; }
trap pack_records_at_exit EXIT
trap 'exit 143' TERM
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
rm -f $R/build.log $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
# run_tests SECONDS PYTEST_ARGS...: pytest with the arguments, stopped after SECONDS, its log in $R
# named after them; prints its exit status, the time since T0 and pytest's last line.
run_tests() {
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
