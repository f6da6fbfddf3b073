#!/bin/sh
# Stand-in for nvidia-cuda-mps-control in tests: records each invocation (arguments, the
# variables colo must set, the command read from stdin) in $CUDA_MPS_LOG_DIRECTORY/calls and
# keeps "daemon running" state as a file in the pipe directory, so starting twice or quitting
# a daemon that is not running fails as with the real binary.
log="$CUDA_MPS_LOG_DIRECTORY/calls"
ctl="$CUDA_MPS_PIPE_DIRECTORY/control"
if [ "$1" = "-d" ]; then
  if [ -e "$ctl" ]; then
    echo "An instance of this daemon is already running" >&2
    exit 1
  fi
  echo "start -d CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY" >> "$log"
  : > "$ctl"
  exit 0
fi
read -r cmd
echo "command $cmd CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY" >> "$log"
if [ "$cmd" = "quit" ]; then
  if [ ! -e "$ctl" ]; then
    echo "Cannot find MPS control daemon process" >&2
    exit 1
  fi
  rm -f "$ctl"
fi
exit 0
