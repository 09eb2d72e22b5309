#!/usr/bin/env bash
# What chronicle._unpack() (callable by every monitoring role) costs on
# bytes of the caller's choosing: a crafted packed value of the waits
# source, BENCH_ROWS rows (default 10 million) of one byte each, decoded
# under work_mem = 4MB; prints the decoding backend's peak resident memory
# (VmHWM of /proc/<pid>/status, which includes the input and its hex text)
# and the time.  docs/reliability.md keeps the figures.
#
#   PG_CONFIG=/path/pg_config bench/unpack_memory.sh
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_as_pgchronicle bench/unpack_memory.sh "$@"
lib_install
rows=${BENCH_ROWS:-10000000}
lib_tmp_cluster unpack-memory "chronicle.snapshot_interval = '1s'"
psql=("$LIB_BINDIR/psql" -XAt -v ON_ERROR_STOP=1)
"${psql[@]}" -c 'CREATE EXTENSION pg_chronicle' >/dev/null
lib_poll_sql 'a snapshot with wait keys' 30 \
	"SELECT count(*) > 0 FROM chronicle.history_key WHERE source = 'waits'"

id=$("${psql[@]}" -c "SELECT min(key_id) FROM chronicle.history_key WHERE source = 'waits'")
cols=$("${psql[@]}" -c "SELECT string_agg(format('%I %s', column_name, column_type), ', ' ORDER BY ordinal)
                          FROM chronicle._source_columns() WHERE source = 'waits'")
# The value: version 2 with the bitmaps by column (0x28), the row count as
# a varint, the one value column's mode (zero), the first row's key id,
# then a key id difference of 0 for every further row.
varint() {
	local v=$1 s=''
	while [ "$v" -ge 128 ]; do
		s+=$(printf '%02x' $(((v & 127) | 128)))
		v=$((v >> 7))
	done
	printf '%s%02x' "$s" "$v"
}
head_hex="28$(varint "$rows")00$(varint "$id")"

coproc PSQL { "${psql[@]}" 2>&1; }
echo 'SELECT pg_backend_pid();' >&"${PSQL[1]}"
read -r pid <&"${PSQL[0]}"
start=$(date +%s.%N)
echo "SET work_mem = '4MB';
SELECT count(*) FROM chronicle._unpack('waits', now(),
       '\\x$head_hex'::bytea || decode(repeat('00', $rows - 1), 'hex')) AS u($cols);" >&"${PSQL[1]}"
read -r _ <&"${PSQL[0]}"
read -r n <&"${PSQL[0]}"
end=$(date +%s.%N)
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
exec {PSQL[1]}>&-
printf '%s: %s rows from %d bytes in %.2f s, peak resident memory %d MB\n' \
	"$("$LIB_PG_CONFIG" --version)" "$n" "$(( ${#head_hex} / 2 + rows - 1 ))" \
	"$(echo "$end - $start" | bc)" $((hwm / 1024))
