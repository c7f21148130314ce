# shellcheck shell=bash
# What the scripts' command lines share (sourced by fuzz.sh and run-local.sh, which define
# die_usage MESSAGE: say it and where the help is, then exit 2).

# check_count VALUE OPTION MAX: VALUE must be a whole number from 1 to MAX (else die_usage).
check_count() {
  case "$1" in
    ''|*[!0-9]*) die_usage "$2 needs a whole number from 1 to $3, not '$1'" ;;
  esac
  if [ "${#1}" -gt 5 ] || [ "$1" -lt 1 ] || [ "$1" -gt "$3" ]; then
    die_usage "$2 needs a whole number from 1 to $3, not '$1'"
  fi
}
