# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_seen_global_optspecs
    string join \n h/help V/version
end

function __fish_seen_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_seen_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_seen_using_subcommand
    set -l cmd (__fish_seen_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c seen -n "__fish_seen_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seen -n "__fish_seen_needs_command" -s V -l version -d 'Print version'
complete -c seen -n "__fish_seen_needs_command" -f -a "build" -d 'Make a filter file from lines (files or standard input)'
complete -c seen -n "__fish_seen_needs_command" -f -a "query" -d 'Ask a filter whether items are (probably) in it, grep-style'
complete -c seen -n "__fish_seen_needs_command" -f -a "dedup" -d 'Print each line only the first time it is seen, in input order'
complete -c seen -n "__fish_seen_needs_command" -f -a "stats" -d 'Report a filter\'s parameters, fill ratio, estimated items and false-positive rate'
complete -c seen -n "__fish_seen_needs_command" -f -a "verify" -d 'Check a filter file: its header and every data segment against its checksum'
complete -c seen -n "__fish_seen_needs_command" -f -a "copy" -d 'Copy a filter between a file and Redis (or Redis and Redis), byte for byte'
complete -c seen -n "__fish_seen_needs_command" -f -a "merge" -d 'Merge filters into one (the union of their lines): the OR of their bits'
complete -c seen -n "__fish_seen_needs_command" -f -a "plan" -d 'Show the layout, size and false-positive rate a filter would have, without writing anything'
complete -c seen -n "__fish_seen_needs_command" -f -a "completions" -d 'Print a completion script for a shell (bash, zsh, fish, elvish, powershell)'
complete -c seen -n "__fish_seen_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seen -n "__fish_seen_using_subcommand build" -s o -l output -d 'Filter to write: a file, or a Redis location (redis://[USER@]HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME; the password, if any, in SEEN_REDIS_PASSWORD)' -r -F
complete -c seen -n "__fish_seen_using_subcommand build" -s p -l fpp -d 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l growth -d 'When full, add a layer G times larger (2-16) [default: 2]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l window -d 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l slices -d 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l redis-layout -d 'How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in small Redis sets: one command per line, nothing read whole, about 4.7 bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies to and from a file byte for byte, but every run reads the shards it touches whole) [default: sets]. Only when the filter is made in Redis' -r -f -a "sets\t'32-bit fingerprints in small sets: one command per line, nothing read whole, about 4.7 bytes per line'
bloom\t'Bloom layers in shards (seen 0.2): copies to and from a file byte for byte, but each run reads every shard it touches whole'"
complete -c seen -n "__fish_seen_using_subcommand build" -l seed -d 'Hash seed for a new filter (decimal or 0x-hex); the default is fixed, so rebuilding from the same lines gives the same file bits' -r
complete -c seen -n "__fish_seen_using_subcommand build" -s j -l threads -d 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value' -r
complete -c seen -n "__fish_seen_using_subcommand build" -s k -l key -d 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)' -r
complete -c seen -n "__fish_seen_using_subcommand build" -s t -l delimiter -d 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. \',\' or \';\'), \'\\t\' or 0x1f [default: runs of blanks]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -s n -l capacity -d 'Distinct lines to size the new filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]' -r
complete -c seen -n "__fish_seen_using_subcommand build" -l fixed -l no-grow -d 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
complete -c seen -n "__fish_seen_using_subcommand build" -l force -d 'Replace FILTER if it exists (atomically); only a seen filter (or an empty file) is replaced, never another kind of file or a symbolic link'
complete -c seen -n "__fish_seen_using_subcommand build" -l add -d 'Insert into the existing FILTER instead of making a new one (sizing flags are then ignored)'
complete -c seen -n "__fish_seen_using_subcommand build" -l summary -d 'Print a summary to stderr: lines read, new, duplicates, expected false positives'
complete -c seen -n "__fish_seen_using_subcommand build" -l json -d 'With --summary: print it as one JSON object (schema in docs/JSON.md)'
complete -c seen -n "__fish_seen_using_subcommand build" -s z -l null -d 'Records end with NUL instead of newline (input and output), as with `find -print0`'
complete -c seen -n "__fish_seen_using_subcommand build" -l no-mmap -d 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
complete -c seen -n "__fish_seen_using_subcommand build" -l trim -d 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
complete -c seen -n "__fish_seen_using_subcommand build" -l url -d 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
complete -c seen -n "__fish_seen_using_subcommand build" -l url-sort-query -d 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
complete -c seen -n "__fish_seen_using_subcommand build" -s i -l ignore-case -d 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
complete -c seen -n "__fish_seen_using_subcommand build" -l raw-keys -d 'Compare whole records as they are, ignoring key options recorded in the filter'
complete -c seen -n "__fish_seen_using_subcommand build" -l progress -d 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
complete -c seen -n "__fish_seen_using_subcommand build" -s q -l quiet -d 'No progress and no notes on stderr (warnings and errors still print)'
complete -c seen -n "__fish_seen_using_subcommand build" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seen -n "__fish_seen_using_subcommand query" -s f -l file -d 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter\'s key options pick each record\'s key (see --as-keys)' -r -F
complete -c seen -n "__fish_seen_using_subcommand query" -s j -l threads -d 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value' -r
complete -c seen -n "__fish_seen_using_subcommand query" -s k -l key -d 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)' -r
complete -c seen -n "__fish_seen_using_subcommand query" -s t -l delimiter -d 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. \',\' or \';\'), \'\\t\' or 0x1f [default: runs of blanks]' -r
complete -c seen -n "__fish_seen_using_subcommand query" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand query" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand query" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand query" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand query" -l as-keys -d 'Lines read from --file or standard input are keys, not records: the filter\'s field selection (-k/-t) is not applied to them (its trim, URL and case rules are), as for items on the command line'
complete -c seen -n "__fish_seen_using_subcommand query" -s v -l invert-match -d 'Select the items that are NOT in the filter'
complete -c seen -n "__fish_seen_using_subcommand query" -s c -l count -d 'Print only the number of selected items'
complete -c seen -n "__fish_seen_using_subcommand query" -s q -l quiet -l silent -d 'Print nothing; only the exit status tells'
complete -c seen -n "__fish_seen_using_subcommand query" -l all -d 'Exit 0 only if every item is selected (and there is at least one)'
complete -c seen -n "__fish_seen_using_subcommand query" -l json -d 'Print one JSON object per item with its verdict (schema in docs/JSON.md), instead of the selected items'
complete -c seen -n "__fish_seen_using_subcommand query" -s z -l null -d 'Records end with NUL instead of newline (input and output), as with `find -print0`'
complete -c seen -n "__fish_seen_using_subcommand query" -l no-mmap -d 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
complete -c seen -n "__fish_seen_using_subcommand query" -l trim -d 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
complete -c seen -n "__fish_seen_using_subcommand query" -l url -d 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
complete -c seen -n "__fish_seen_using_subcommand query" -l url-sort-query -d 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
complete -c seen -n "__fish_seen_using_subcommand query" -s i -l ignore-case -d 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
complete -c seen -n "__fish_seen_using_subcommand query" -l raw-keys -d 'Compare whole records as they are, ignoring key options recorded in the filter'
complete -c seen -n "__fish_seen_using_subcommand query" -l progress -d 'Show progress on stderr even when it is not a terminal'
complete -c seen -n "__fish_seen_using_subcommand query" -s h -l help -d 'Print help'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s f -l filter -d 'Persistent filter: lines recorded in earlier runs are suppressed and new ones recorded. Created if missing (sized by the flags below; at least 10M lines). A file, or a Redis location shared by many machines (redis://HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME)' -r -F
complete -c seen -n "__fish_seen_using_subcommand dedup" -s p -l fpp -d 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l growth -d 'When full, add a layer G times larger (2-16) [default: 2]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l window -d 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l slices -d 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l redis-layout -d 'How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in small Redis sets: one command per line, nothing read whole, about 4.7 bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies to and from a file byte for byte, but every run reads the shards it touches whole) [default: sets]. Only when the filter is made in Redis' -r -f -a "sets\t'32-bit fingerprints in small sets: one command per line, nothing read whole, about 4.7 bytes per line'
bloom\t'Bloom layers in shards (seen 0.2): copies to and from a file byte for byte, but each run reads every shard it touches whole'"
complete -c seen -n "__fish_seen_using_subcommand dedup" -l commit-every -d 'With -f: record printed lines in FILTER (and let other processes at it) at least this often: a duration (500ms, 2s, 1min) or a line count (100k, 1M) [default: 1s or 1M lines, whichever comes first, but at least 16 times as long as the last commit took, which grows with the filter (the first span of a filter held in memory: as its commit is foreseen to take)]; a span (the lines recorded by one commit) ends between input chunks (4 MiB), so it holds at least one chunk, when the input pauses for 20 ms (by default, not before those 16 times), and also once 524,288 new lines wait to be recorded (bounded memory; with -m, 1,048,576 while the filter is held in memory). A line is recorded only after it was written out, so a killed run loses nothing; it may print again, in the next run, the lines of its last span' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l dups-out -d 'Write every line that is not printed (the duplicates, and the new lines dropped as false positives) to FILE, in input order, the same bytes: the "probably seen" lines, for a second look against an exact store. With -f, a line is recorded only after both outputs it goes to were written. FILE is created or truncated' -r -F
complete -c seen -n "__fish_seen_using_subcommand dedup" -s m -l max-count -d 'Stop after printing N lines (as `grep -m`). With -f, exactly those N are recorded, so `seen dedup -f F -m 1000 < frontier` hands out the next 1,000 new lines each run (`| head -1000` cannot: what head left unread in the pipe is not known, so the open span is not recorded). 0 reads and records nothing. Not with a Redis filter (it records lines before printing them)' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -s j -l threads -d 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -s k -l key -d 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -s t -l delimiter -d 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. \',\' or \';\'), \'\\t\' or 0x1f [default: runs of blanks]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -s n -l capacity -d 'Distinct lines to size the filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]' -r
complete -c seen -n "__fish_seen_using_subcommand dedup" -l fixed -l no-grow -d 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l summary -d 'Print a summary to stderr: lines read, written, duplicates, and how many new lines were probably dropped as false positives'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l json -d 'With --summary: print it as one JSON object (schema in docs/JSON.md)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s d -l repeated -d 'Print each line that repeats, once, at its second occurrence (as `uniq -d`, but the repeats need not be adjacent); with -f, a line recorded in an earlier run repeats at its first occurrence here. About `p` of the lines seen once are printed too, and about `p` of the repeated ones are not (false positives of the filter, and of a second in-memory filter of the lines printed)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s D -l all-repeated -d 'Print every occurrence of a line after its first (each repeat): the inverse of the default (as `uniq -D` prints repeats, minus the first)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s z -l null -d 'Records end with NUL instead of newline (input and output), as with `find -print0`'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l no-mmap -d 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l trim -d 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l url -d 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l url-sort-query -d 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s i -l ignore-case -d 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l raw-keys -d 'Compare whole records as they are, ignoring key options recorded in the filter'
complete -c seen -n "__fish_seen_using_subcommand dedup" -l progress -d 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s q -l quiet -d 'No progress and no notes on stderr (warnings and errors still print)'
complete -c seen -n "__fish_seen_using_subcommand dedup" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seen -n "__fish_seen_using_subcommand stats" -l max-fpp -d 'Exit 1 when the estimated current false-positive rate is above P (with --probe: when the measured rate is)' -r
complete -c seen -n "__fish_seen_using_subcommand stats" -l probe -d 'Measure the false-positive rate: look up the lines of FILE (`-`: standard input), items known never to have been inserted, and report the share found present, with its 95% confidence interval, next to the estimate' -r -F
complete -c seen -n "__fish_seen_using_subcommand stats" -l max-fill -d 'Exit 1 when the fill ratio (bits set / bits, over all layers) is above F (e.g. 0.5, 50%)' -r
complete -c seen -n "__fish_seen_using_subcommand stats" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand stats" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand stats" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand stats" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand stats" -l json -d 'Print one JSON object (schema in docs/STATS.md) instead of a table'
complete -c seen -n "__fish_seen_using_subcommand stats" -l progress -d 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
complete -c seen -n "__fish_seen_using_subcommand stats" -s q -l quiet -d 'No progress and no notes on stderr (warnings and errors still print)'
complete -c seen -n "__fish_seen_using_subcommand stats" -s h -l help -d 'Print help'
complete -c seen -n "__fish_seen_using_subcommand verify" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand verify" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand verify" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand verify" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand verify" -l repair -d 'If a writer was killed (the file is dirty), first recompute its checksums and counters from its bits, as the next writer would (takes the write lock); then check. A clean file is only checked: its damage is reported, never repaired. (A dirty file\'s stale checksums cannot be told from damage: --repair trusts its bits.)'
complete -c seen -n "__fish_seen_using_subcommand verify" -l progress -d 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
complete -c seen -n "__fish_seen_using_subcommand verify" -s q -l quiet -d 'No progress and no notes on stderr (warnings and errors still print)'
complete -c seen -n "__fish_seen_using_subcommand verify" -s h -l help -d 'Print help'
complete -c seen -n "__fish_seen_using_subcommand copy" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand copy" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand copy" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand copy" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand copy" -l force -d 'Replace a filter already at TO'
complete -c seen -n "__fish_seen_using_subcommand copy" -l progress -d 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
complete -c seen -n "__fish_seen_using_subcommand copy" -s q -l quiet -d 'No progress and no notes on stderr (warnings and errors still print)'
complete -c seen -n "__fish_seen_using_subcommand copy" -s h -l help -d 'Print help'
complete -c seen -n "__fish_seen_using_subcommand merge" -s o -l output -d 'The merged filter: a file, or a Redis location. A file may be one of the inputs (replaced by the union); a Redis input, or any other filter already there, needs --force' -r -F
complete -c seen -n "__fish_seen_using_subcommand merge" -l wait -d 'Give up (exit 2) when another process has held the filter\'s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]' -r
complete -c seen -n "__fish_seen_using_subcommand merge" -l redis-timeout -d 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]' -r
complete -c seen -n "__fish_seen_using_subcommand merge" -l redis-wait -d 'With a Redis filter that this run writes: before printing a batch\'s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]' -r
complete -c seen -n "__fish_seen_using_subcommand merge" -l now -d 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]' -r
complete -c seen -n "__fish_seen_using_subcommand merge" -l force -d 'Replace a filter already at OUT that is not one of the inputs'
complete -c seen -n "__fish_seen_using_subcommand merge" -l progress -d 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
complete -c seen -n "__fish_seen_using_subcommand merge" -s q -l quiet -d 'No progress and no notes on stderr (warnings and errors still print)'
complete -c seen -n "__fish_seen_using_subcommand merge" -s h -l help -d 'Print help'
complete -c seen -n "__fish_seen_using_subcommand plan" -s p -l fpp -d 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]' -r
complete -c seen -n "__fish_seen_using_subcommand plan" -l growth -d 'When full, add a layer G times larger (2-16) [default: 2]' -r
complete -c seen -n "__fish_seen_using_subcommand plan" -l window -d 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]' -r
complete -c seen -n "__fish_seen_using_subcommand plan" -l slices -d 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]' -r
complete -c seen -n "__fish_seen_using_subcommand plan" -l layers -d 'How many layers of a growing filter to show' -r
complete -c seen -n "__fish_seen_using_subcommand plan" -s n -l capacity -d 'Distinct lines to plan for (e.g. 1e6, 50k, 10M) [default: 10M]' -r
complete -c seen -n "__fish_seen_using_subcommand plan" -l fixed -l no-grow -d 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
complete -c seen -n "__fish_seen_using_subcommand plan" -l classic -d 'Also show the textbook classic (unblocked) Bloom filter for -n and -p'
complete -c seen -n "__fish_seen_using_subcommand plan" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seen -n "__fish_seen_using_subcommand completions" -s h -l help -d 'Print help'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "build" -d 'Make a filter file from lines (files or standard input)'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "query" -d 'Ask a filter whether items are (probably) in it, grep-style'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "dedup" -d 'Print each line only the first time it is seen, in input order'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "stats" -d 'Report a filter\'s parameters, fill ratio, estimated items and false-positive rate'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "verify" -d 'Check a filter file: its header and every data segment against its checksum'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "copy" -d 'Copy a filter between a file and Redis (or Redis and Redis), byte for byte'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "merge" -d 'Merge filters into one (the union of their lines): the OR of their bits'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "plan" -d 'Show the layout, size and false-positive rate a filter would have, without writing anything'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "completions" -d 'Print a completion script for a shell (bash, zsh, fish, elvish, powershell)'
complete -c seen -n "__fish_seen_using_subcommand help; and not __fish_seen_subcommand_from build query dedup stats verify copy merge plan completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
