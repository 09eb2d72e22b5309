# The code of the install script, for the upgrade scripts (see the Makefile
# and docs/development.md, "Upgrade scripts").
#
#   awk -f src/upgrade/code.awk src/sql/*.sql            the code statements
#   awk -v list=1 -f src/upgrade/code.awk FILE...        every statement:
#                                                        file:line, class, start
#
# Splits SQL files into statements the way PostgreSQL's lexer does (-- and
# nested /* */ comments, '...' and E'...' strings, "..." identifiers,
# $tag$ dollar quotes) and prints those that (re)define code, in file order:
#
#   code   CREATE [OR REPLACE] FUNCTION / PROCEDURE / AGGREGATE / TRIGGER / VIEW
#          (printed as CREATE OR REPLACE: re-run on the previous release's
#          objects, they replace them), ALTER FUNCTION / PROCEDURE / ROUTINE /
#          AGGREGATE / VIEW, COMMENT ON anything, GRANT and REVOKE on
#          functions, procedures, routines and the schema; and any statement
#          right after a line "-- @upgrade" (comment lines may come between):
#          what every upgrade runs again at the end of the code, as the
#          install script does (the partition layout, pg_dump's list)
#   data   what the previous release already has, or what an upgrade changes
#          by hand-written steps: CREATE TABLE / INDEX / SEQUENCE / TYPE /
#          DOMAIN / SCHEMA, ALTER TABLE / SEQUENCE / TYPE, GRANT and REVOKE on
#          tables and sequences (ON TABLE, ON SEQUENCE, ON ALL TABLES /
#          SEQUENCES IN SCHEMA, ON schema.name), INSERT, UPDATE, DELETE, SELECT, DO, SET,
#          psql's backslash commands
#
# Anything else, or a file that ends inside a statement, a comment or a
# quote, stops it with a message and exit status 1: a statement is never
# dropped unseen.  POSIX awk only (it runs at build time, on every machine
# PGXS builds on).

function fail(file, line, msg)
{
	printf "%s:%d: %s\n", file, line, msg | "cat 1>&2"
	failed = 1
	exit 1
}

function class_of(head)
{
	if (head ~ /^CREATE (OR REPLACE )?(FUNCTION|PROCEDURE|AGGREGATE|TRIGGER|VIEW) /)
		return "code"
	if (head ~ /^ALTER (FUNCTION|PROCEDURE|ROUTINE|AGGREGATE|VIEW) / || head ~ /^COMMENT ON /)
		return "code"
	if (head ~ /^(GRANT|REVOKE) /)
	{
		if (head ~ / ON (FUNCTION|PROCEDURE|ROUTINE|SCHEMA|ALL (FUNCTIONS|PROCEDURES|ROUTINES) IN SCHEMA) /)
			return "code"
		if (head ~ / ON (TABLE|SEQUENCE|ALL (TABLES|SEQUENCES) IN SCHEMA) / ||
			head ~ / ON [A-Z_][A-Z0-9_]*\./)
			return "data"
		return ""
	}
	if (head ~ /^CREATE (UNLOGGED )?TABLE / || head ~ /^CREATE (UNIQUE )?INDEX / ||
		head ~ /^CREATE (SEQUENCE|TYPE|DOMAIN|SCHEMA) / || head ~ /^ALTER (TABLE|SEQUENCE|TYPE) /)
		return "data"
	if (head ~ /^(INSERT|UPDATE|DELETE|SELECT|DO|SET|RESET)[ ;]/)
		return "data"
	return ""
}

# A statement is complete (text without its trailing newline).
function statement(text, line,    head, class)
{
	head = substr(text, 1, 400)
	gsub(/[ \t\r\n]+/, " ", head)
	head = toupper(head)
	class = class_of(head)
	if (class == "")
		fail(FILENAME, line, "cannot tell whether this statement is code or data: " substr(head, 1, 80))
	if (again)
		class = class "+@upgrade"
	again = 0
	if (list)
	{
		printf "%s:%d\t%s\t%s\n", FILENAME, line, class, substr(head, 1, 100)
		return
	}
	if (class !~ /^code|@upgrade$/)
		return
	if (head ~ /^CREATE (FUNCTION|PROCEDURE|AGGREGATE|TRIGGER|VIEW) /)
		text = substr(text, 1, 6) " OR REPLACE" substr(text, 7)
	printf "-- %s:%d\n%s\n\n", FILENAME, line, text
}

function end_of_file()
{
	if (state != "")
		fail(prev_file, opened, "the file ends inside " what[state] " opened here")
	if (in_stmt)
		fail(prev_file, stmt_line, "the file ends inside this statement (no ;)")
	if (again)
		fail(prev_file, again_line, "no statement follows this -- @upgrade")
}

BEGIN {
	what["squote"] = "a quoted string"
	what["ident"] = "a quoted identifier"
	what["dollar"] = "a dollar quote"
	what["block"] = "a /* comment */"
	state = ""
	failed = 0
}

FNR == 1 && NR > 1 {
	end_of_file()
}

{
	prev_file = FILENAME
	line = $0
	n = length(line)
	seg = 1
	if (state == "" && !in_stmt && line ~ /^[ \t]*-- @upgrade([ \t]|$)/)
	{
		if (again)
			fail(FILENAME, FNR, "two -- @upgrade lines for one statement")
		again = 1
		again_line = FNR
		next
	}
	# psql's backslash commands (\echo ... \quit) are a line of their own.
	if (state == "" && !in_stmt && line ~ /^[ \t]*\\/)
	{
		if (list)
			printf "%s:%d\tdata\t%s\n", FILENAME, FNR, line
		next
	}
	i = 1
	while (i <= n)
	{
		if (state == "dollar")
		{
			p = index(substr(line, i), tag)
			if (p == 0)
				break
			i += p - 1 + length(tag)
			state = ""
			continue
		}
		c = substr(line, i, 1)
		if (state == "squote")
		{
			if (c == "\\" && estring)
				i += 2
			else if (c == "'" && substr(line, i + 1, 1) == "'")
				i += 2
			else
			{
				if (c == "'")
					state = ""
				i++
			}
			continue
		}
		if (state == "ident")
		{
			if (c == "\"" && substr(line, i + 1, 1) == "\"")
				i += 2
			else
			{
				if (c == "\"")
					state = ""
				i++
			}
			continue
		}
		c2 = substr(line, i, 2)
		if (state == "block")
		{
			if (c2 == "/*")
			{
				depth++
				i += 2
			}
			else if (c2 == "*/")
			{
				if (--depth == 0)
					state = ""
				i += 2
			}
			else
				i++
			continue
		}
		# Outside quotes and comments.
		if (c2 == "--")
			break
		if (c2 == "/*")
		{
			state = "block"
			depth = 1
			opened = FNR
			i += 2
			continue
		}
		if (c == " " || c == "\t" || c == "\r")
		{
			i++
			continue
		}
		if (!in_stmt)
		{
			in_stmt = 1
			stmt = ""
			stmt_line = FNR
			seg = i
		}
		before = i > 1 ? substr(line, i - 1, 1) : ""
		if (c == "'")
		{
			estring = (before == "E" || before == "e") &&
				(i < 3 || substr(line, i - 2, 1) !~ /[A-Za-z0-9_$]/)
			state = "squote"
			opened = FNR
			i++
			continue
		}
		if (c == "\"")
		{
			state = "ident"
			opened = FNR
			i++
			continue
		}
		if (c == "$" && before !~ /[A-Za-z0-9_$]/ &&
			match(substr(line, i), /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/))
		{
			tag = substr(line, i, RLENGTH)
			state = "dollar"
			opened = FNR
			i += RLENGTH
			continue
		}
		if (c == ";")
		{
			statement(stmt substr(line, seg, i - seg + 1), stmt_line)
			in_stmt = 0
		}
		i++
	}
	if (in_stmt)
	{
		stmt = stmt substr(line, seg) "\n"
		seg = 1
	}
}

END {
	if (failed)
		exit 1
	if (NR > 0)
		end_of_file()
	if (failed)
		exit 1
}
