
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'seen' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'seen'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'seen' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('build', 'build', [CompletionResultType]::ParameterValue, 'Make a filter file from lines (files or standard input)')
            [CompletionResult]::new('query', 'query', [CompletionResultType]::ParameterValue, 'Ask a filter whether items are (probably) in it, grep-style')
            [CompletionResult]::new('forget', 'forget', [CompletionResultType]::ParameterValue, 'Forget items: a filter answers them as absent until they are recorded again')
            [CompletionResult]::new('dedup', 'dedup', [CompletionResultType]::ParameterValue, 'Print each line only the first time it is seen, in input order')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Report a filter''s parameters, fill ratio, estimated items and false-positive rate')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a filter file: its header and every data segment against its checksum')
            [CompletionResult]::new('copy', 'copy', [CompletionResultType]::ParameterValue, 'Copy a filter between a file and Redis (or Redis and Redis), byte for byte')
            [CompletionResult]::new('merge', 'merge', [CompletionResultType]::ParameterValue, 'Merge filters into one (the union of their lines), of any sizes')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Show the layout, size and false-positive rate a filter would have, without writing anything')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a completion script for a shell (bash, zsh, fish, elvish, powershell)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'seen;build' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Filter to write: a file, or a Redis location (redis://[USER@]HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME; the password, if any, in SEEN_REDIS_PASSWORD)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Filter to write: a file, or a Redis location (redis://[USER@]HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME; the password, if any, in SEEN_REDIS_PASSWORD)')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]')
            [CompletionResult]::new('--fpp', '--fpp', [CompletionResultType]::ParameterName, 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]')
            [CompletionResult]::new('--growth', '--growth', [CompletionResultType]::ParameterName, 'When full, add a layer G times larger (2-16) [default: 2]')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]')
            [CompletionResult]::new('--slices', '--slices', [CompletionResultType]::ParameterName, 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]')
            [CompletionResult]::new('--redis-layout', '--redis-layout', [CompletionResultType]::ParameterName, 'How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in small Redis sets: one command per line, nothing read whole, about 4.7 bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies to and from a file byte for byte, but every run reads the shards it touches whole) [default: sets]. Only when the filter is made in Redis')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Hash seed for a new filter (decimal or 0x-hex); the default is fixed, so rebuilding from the same lines gives the same file bits')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--delimiter', '--delimiter', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Distinct lines to size the new filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]')
            [CompletionResult]::new('--capacity', '--capacity', [CompletionResultType]::ParameterName, 'Distinct lines to size the new filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]')
            [CompletionResult]::new('--fixed', '--fixed', [CompletionResultType]::ParameterName, 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)')
            [CompletionResult]::new('--no-grow', '--no-grow', [CompletionResultType]::ParameterName, 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace FILTER if it exists (atomically, keeping its key options unless key flags are given); only a seen filter (or an empty file) is replaced')
            [CompletionResult]::new('--add', '--add', [CompletionResultType]::ParameterName, 'Insert into the existing FILTER instead of making a new one (sizing flags are then ignored)')
            [CompletionResult]::new('--summary', '--summary', [CompletionResultType]::ParameterName, 'Print a summary to stderr: lines read, new, duplicates, expected false positives')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'With --summary: print it as one JSON object (schema in docs/JSON.md)')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--null', '--null', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--no-mmap', '--no-mmap', [CompletionResultType]::ParameterName, 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)')
            [CompletionResult]::new('--trim', '--trim', [CompletionResultType]::ParameterName, 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)')
            [CompletionResult]::new('--url-sort-query', '--url-sort-query', [CompletionResultType]::ParameterName, 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--ignore-case', '--ignore-case', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--raw-keys', '--raw-keys', [CompletionResultType]::ParameterName, 'Compare whole records as they are, ignoring key options recorded in the filter')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'seen;query' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--delimiter', '--delimiter', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('--as-keys', '--as-keys', [CompletionResultType]::ParameterName, 'Lines read from --file or standard input are keys, not records: the filter''s field selection (-k/-t) is not applied to them (its trim, URL and case rules are), as for items on the command line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Select the items that are NOT in the filter')
            [CompletionResult]::new('--invert-match', '--invert-match', [CompletionResultType]::ParameterName, 'Select the items that are NOT in the filter')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Print only the number of selected items')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Print only the number of selected items')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing; only the exit status tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing; only the exit status tells')
            [CompletionResult]::new('--silent', '--silent', [CompletionResultType]::ParameterName, 'Print nothing; only the exit status tells')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Exit 0 only if every item is selected (and there is at least one)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object per item with its verdict (schema in docs/JSON.md), instead of the selected items')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--null', '--null', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--no-mmap', '--no-mmap', [CompletionResultType]::ParameterName, 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)')
            [CompletionResult]::new('--trim', '--trim', [CompletionResultType]::ParameterName, 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)')
            [CompletionResult]::new('--url-sort-query', '--url-sort-query', [CompletionResultType]::ParameterName, 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--ignore-case', '--ignore-case', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--raw-keys', '--raw-keys', [CompletionResultType]::ParameterName, 'Compare whole records as they are, ignoring key options recorded in the filter')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;forget' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--delimiter', '--delimiter', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('--as-keys', '--as-keys', [CompletionResultType]::ParameterName, 'Lines read from --file or standard input are keys, not records: the filter''s field selection (-k/-t) is not applied to them (its trim, URL and case rules are), as for items on the command line')
            [CompletionResult]::new('--summary', '--summary', [CompletionResultType]::ParameterName, 'Print a summary on stderr: items read, forgotten, not present, list size')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'With --summary: print it as one JSON object (schema in docs/JSON.md)')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--null', '--null', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--no-mmap', '--no-mmap', [CompletionResultType]::ParameterName, 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)')
            [CompletionResult]::new('--trim', '--trim', [CompletionResultType]::ParameterName, 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)')
            [CompletionResult]::new('--url-sort-query', '--url-sort-query', [CompletionResultType]::ParameterName, 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--ignore-case', '--ignore-case', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--raw-keys', '--raw-keys', [CompletionResultType]::ParameterName, 'Compare whole records as they are, ignoring key options recorded in the filter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;dedup' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Persistent filter: lines recorded in earlier runs are suppressed and new ones recorded. Created if missing (sized by the flags below; at least 10M lines). A file, or a Redis location shared by many machines (redis://HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Persistent filter: lines recorded in earlier runs are suppressed and new ones recorded. Created if missing (sized by the flags below; at least 10M lines). A file, or a Redis location shared by many machines (redis://HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME)')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]')
            [CompletionResult]::new('--fpp', '--fpp', [CompletionResultType]::ParameterName, 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]')
            [CompletionResult]::new('--growth', '--growth', [CompletionResultType]::ParameterName, 'When full, add a layer G times larger (2-16) [default: 2]')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]')
            [CompletionResult]::new('--slices', '--slices', [CompletionResultType]::ParameterName, 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]')
            [CompletionResult]::new('--redis-layout', '--redis-layout', [CompletionResultType]::ParameterName, 'How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in small Redis sets: one command per line, nothing read whole, about 4.7 bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies to and from a file byte for byte, but every run reads the shards it touches whole) [default: sets]. Only when the filter is made in Redis')
            [CompletionResult]::new('--commit-every', '--commit-every', [CompletionResultType]::ParameterName, 'With -f: record printed lines in FILTER (and let other processes at it) at least this often: a duration (500ms, 2s, 1min) or a line count (100k, 1M) [default: 1s or 1M lines, whichever comes first, but at least 16 times as long as the last commit took, which grows with the filter (the first span of a filter held in memory: as its commit is foreseen to take)]; a span (the lines recorded by one commit) ends between input chunks (4 MiB), so it holds at least one chunk, when the input pauses for 20 ms (by default, not before those 16 times), and also once 524,288 new lines wait to be recorded (bounded memory; with -m, 1,048,576 while the filter is held in memory). A line is recorded only after it was written out, so a killed run loses nothing; it may print again, in the next run, the lines of its last span')
            [CompletionResult]::new('--dups-out', '--dups-out', [CompletionResultType]::ParameterName, 'Write every line that is not printed (the duplicates, and the new lines dropped as false positives) to FILE, in input order, the same bytes: the "probably seen" lines, for a second look against an exact store. With -f, a line is recorded only after both outputs it goes to were written. FILE is created or truncated')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Stop after printing N lines (as `grep -m`). With -f, exactly those N are recorded, so `seen dedup -f F -m 1000 < frontier` hands out the next 1,000 new lines each run (`| head -1000` cannot: what head left unread in the pipe is not known, so the open span is not recorded). 0 reads and records nothing. Not with a Redis filter (it records lines before printing them)')
            [CompletionResult]::new('--max-count', '--max-count', [CompletionResultType]::ParameterName, 'Stop after printing N lines (as `grep -m`). With -f, exactly those N are recorded, so `seen dedup -f F -m 1000 < frontier` hands out the next 1,000 new lines each run (`| head -1000` cannot: what head left unread in the pipe is not known, so the open span is not recorded). 0 reads and records nothing. Not with a Redis filter (it records lines before printing them)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--delimiter', '--delimiter', [CompletionResultType]::ParameterName, 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Distinct lines to size the filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]')
            [CompletionResult]::new('--capacity', '--capacity', [CompletionResultType]::ParameterName, 'Distinct lines to size the filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]')
            [CompletionResult]::new('--fixed', '--fixed', [CompletionResultType]::ParameterName, 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)')
            [CompletionResult]::new('--no-grow', '--no-grow', [CompletionResultType]::ParameterName, 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)')
            [CompletionResult]::new('--summary', '--summary', [CompletionResultType]::ParameterName, 'Print a summary to stderr: lines read, written, duplicates, and how many new lines were probably dropped as false positives')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'With --summary: print it as one JSON object (schema in docs/JSON.md)')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Print each line that repeats, once, at its second occurrence (as `uniq -d`, but the repeats need not be adjacent); with -f, a line recorded in an earlier run repeats at its first occurrence here. About `p` of the lines seen once are printed too, and about `p` of the repeated ones are not (false positives of the filter, and of a second in-memory filter of the lines printed)')
            [CompletionResult]::new('--repeated', '--repeated', [CompletionResultType]::ParameterName, 'Print each line that repeats, once, at its second occurrence (as `uniq -d`, but the repeats need not be adjacent); with -f, a line recorded in an earlier run repeats at its first occurrence here. About `p` of the lines seen once are printed too, and about `p` of the repeated ones are not (false positives of the filter, and of a second in-memory filter of the lines printed)')
            [CompletionResult]::new('-D', '-D ', [CompletionResultType]::ParameterName, 'Print every occurrence of a line after its first (each repeat): the inverse of the default (as `uniq -D` prints repeats, minus the first)')
            [CompletionResult]::new('--all-repeated', '--all-repeated', [CompletionResultType]::ParameterName, 'Print every occurrence of a line after its first (each repeat): the inverse of the default (as `uniq -D` prints repeats, minus the first)')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--null', '--null', [CompletionResultType]::ParameterName, 'Records end with NUL instead of newline (input and output), as with `find -print0`')
            [CompletionResult]::new('--no-mmap', '--no-mmap', [CompletionResultType]::ParameterName, 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)')
            [CompletionResult]::new('--trim', '--trim', [CompletionResultType]::ParameterName, 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)')
            [CompletionResult]::new('--url-sort-query', '--url-sort-query', [CompletionResultType]::ParameterName, 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--ignore-case', '--ignore-case', [CompletionResultType]::ParameterName, 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)')
            [CompletionResult]::new('--raw-keys', '--raw-keys', [CompletionResultType]::ParameterName, 'Compare whole records as they are, ignoring key options recorded in the filter')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'seen;stats' {
            [CompletionResult]::new('--max-fpp', '--max-fpp', [CompletionResultType]::ParameterName, 'Exit 1 when the estimated current false-positive rate is above P (with --probe: when the measured rate is)')
            [CompletionResult]::new('--probe', '--probe', [CompletionResultType]::ParameterName, 'Measure the false-positive rate: look up the lines of FILE (`-`: standard input), items known never to have been inserted, and report the share found present, with its 95% confidence interval, next to the estimate')
            [CompletionResult]::new('--max-fill', '--max-fill', [CompletionResultType]::ParameterName, 'Exit 1 when the fill ratio (bits set / bits, over all layers) is above F (e.g. 0.5, 50%)')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object (schema in docs/STATS.md) instead of a table')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;verify' {
            [CompletionResult]::new('--set-clock', '--set-clock', [CompletionResultType]::ParameterName, 'Set the time of a filter file with a --window back to TIME (now: this machine''s clock; or as --now takes), after a --now too far ahead moved it; lines recorded after TIME count as recorded at TIME. What it did is said on stderr')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('--repair', '--repair', [CompletionResultType]::ParameterName, 'If a writer was killed (the file is dirty), first recompute its checksums and counters from its bits, as the next writer would (takes the write lock); then check. A clean file is only checked: its damage is reported, never repaired. (A dirty file''s stale checksums cannot be told from damage: --repair trusts its bits.) For a Redis filter: removes the journals on this machine of an earlier filter at that location (deleted or made again), which can never be replayed')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;copy' {
            [CompletionResult]::new('--zstd', '--zstd', [CompletionResultType]::ParameterName, 'Compress a copy into a file or through a pipe with zstd (--zstd=LEVEL: 1-19) [default: 3]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace a filter already at TO')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;merge' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'The merged filter: a file, or a Redis location. A file may be one of the inputs (replaced by the union); a Redis input, or any other filter already there, needs --force')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'The merged filter: a file, or a Redis location. A file may be one of the inputs (replaced by the union); a Redis input, or any other filter already there, needs --force')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]')
            [CompletionResult]::new('--redis-timeout', '--redis-timeout', [CompletionResultType]::ParameterName, 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]')
            [CompletionResult]::new('--redis-wait', '--redis-wait', [CompletionResultType]::ParameterName, 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace a filter already at OUT that is not one of the inputs')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress and no notes on stderr (warnings and errors still print)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;plan' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]')
            [CompletionResult]::new('--fpp', '--fpp', [CompletionResultType]::ParameterName, 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]')
            [CompletionResult]::new('--growth', '--growth', [CompletionResultType]::ParameterName, 'When full, add a layer G times larger (2-16) [default: 2]')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]')
            [CompletionResult]::new('--slices', '--slices', [CompletionResultType]::ParameterName, 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]')
            [CompletionResult]::new('--layers', '--layers', [CompletionResultType]::ParameterName, 'How many layers of a growing filter to show')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Distinct lines to plan for (e.g. 1e6, 50k, 10M) [default: 10M]')
            [CompletionResult]::new('--capacity', '--capacity', [CompletionResultType]::ParameterName, 'Distinct lines to plan for (e.g. 1e6, 50k, 10M) [default: 10M]')
            [CompletionResult]::new('--fixed', '--fixed', [CompletionResultType]::ParameterName, 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)')
            [CompletionResult]::new('--no-grow', '--no-grow', [CompletionResultType]::ParameterName, 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)')
            [CompletionResult]::new('--classic', '--classic', [CompletionResultType]::ParameterName, 'Also show the textbook classic (unblocked) Bloom filter for -n and -p')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'seen;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'seen;help' {
            [CompletionResult]::new('build', 'build', [CompletionResultType]::ParameterValue, 'Make a filter file from lines (files or standard input)')
            [CompletionResult]::new('query', 'query', [CompletionResultType]::ParameterValue, 'Ask a filter whether items are (probably) in it, grep-style')
            [CompletionResult]::new('forget', 'forget', [CompletionResultType]::ParameterValue, 'Forget items: a filter answers them as absent until they are recorded again')
            [CompletionResult]::new('dedup', 'dedup', [CompletionResultType]::ParameterValue, 'Print each line only the first time it is seen, in input order')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Report a filter''s parameters, fill ratio, estimated items and false-positive rate')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a filter file: its header and every data segment against its checksum')
            [CompletionResult]::new('copy', 'copy', [CompletionResultType]::ParameterValue, 'Copy a filter between a file and Redis (or Redis and Redis), byte for byte')
            [CompletionResult]::new('merge', 'merge', [CompletionResultType]::ParameterValue, 'Merge filters into one (the union of their lines), of any sizes')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Show the layout, size and false-positive rate a filter would have, without writing anything')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a completion script for a shell (bash, zsh, fish, elvish, powershell)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'seen;help;build' {
            break
        }
        'seen;help;query' {
            break
        }
        'seen;help;forget' {
            break
        }
        'seen;help;dedup' {
            break
        }
        'seen;help;stats' {
            break
        }
        'seen;help;verify' {
            break
        }
        'seen;help;copy' {
            break
        }
        'seen;help;merge' {
            break
        }
        'seen;help;plan' {
            break
        }
        'seen;help;completions' {
            break
        }
        'seen;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
