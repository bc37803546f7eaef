#!/usr/bin/env bash
# A .gitattributes file in the data directory is the user's data, not instructions: with `text
# eol=crlf`, `ident` and a filter named on every path, the phone stores and the watch receives every
# file byte for byte (CRLF line ends, a bare CR, `$Id$`), both ways.
source "$(dirname "$0")/lib.sh"

init_pair 50
start_device phone
start_device watch
P=$(data_of phone) W=$(data_of watch)
printf '* text eol=crlf ident\n*.bin filter=lfs diff=lfs merge=lfs -text\n*.txt text eol=lf\n' >"$T/attrs"
cp "$T/attrs" "$P/.gitattributes"
printf 'line one\r\nline two\r\nbare CR\rend\n' >"$T/crlf"
printf 'keyword $Id$ here\n' >"$T/ident"
printf 'mixed\nline ends\r\n' >"$T/mixed"
cp "$T/crlf" "$P/windows.txt"
cp "$T/ident" "$P/keyword.bin"
cp "$T/mixed" "$P/mixed.md"
wait_until same_file watch windows.txt "$T/crlf"
wait_until same_file watch keyword.bin "$T/ident"
wait_until same_file watch mixed.md "$T/mixed"
wait_until same_file watch .gitattributes "$T/attrs"
on phone head_blob_is windows.txt "$T/crlf" || fail "the phone's store changed windows.txt's bytes"
on watch head_blob_is keyword.bin "$T/ident" || fail "the watch's store changed keyword.bin's bytes"
printf 'from the watch\r\n' >"$T/back"
cp "$T/back" "$W/back.txt"
wait_until same_file phone back.txt "$T/back"
on phone head_blob_is back.txt "$T/back" || fail "back.txt's bytes changed on the way"
wait_until converged
