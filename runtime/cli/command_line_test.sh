#!/bin/sh
# A tool's command line (command_line.h):
#   command_line_test.sh help PROGRAM [SUBCOMMAND...] -- FLAG...
#     PROGRAM [SUBCOMMAND...] --help exits 0 and its help names every FLAG.
#   command_line_test.sh error PATTERN PROGRAM [ARGUMENT...]
#     the command is a usage error: exit status 2, output matching PATTERN.
mode=$1
shift
case $mode in
help)
  command=
  while [ "$1" != -- ]; do
    command="$command $1"
    shift
  done
  shift
  help=$($command --help 2>&1)
  status=$?
  if [ $status -ne 0 ]; then
    echo "FAIL:$command --help: exit $status: $help"
    exit 1
  fi
  for flag in "$@"; do
    if ! printf '%s\n' "$help" | grep -q -- "$flag\b"; then
      echo "FAIL:$command --help does not name $flag: $help"
      exit 1
    fi
  done
  ;;
error)
  pattern=$1
  shift
  output=$("$@" 2>&1)
  status=$?
  if [ $status -ne 2 ] || ! printf '%s\n' "$output" | grep -q -- "$pattern"; then
    echo "FAIL: $*: exit $status (want 2), output (want $pattern): $output"
    exit 1
  fi
  ;;
*)
  echo "usage: command_line_test.sh help|error ..."
  exit 2
  ;;
esac
echo PASS
