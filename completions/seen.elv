
use builtin;
use str;

set edit:completion:arg-completer[seen] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'seen'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'seen'= {
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand build 'Make a filter file from lines (files or standard input)'
            cand query 'Ask a filter whether items are (probably) in it, grep-style'
            cand forget 'Forget items: a filter answers them as absent until they are recorded again'
            cand dedup 'Print each line only the first time it is seen, in input order'
            cand stats 'Report a filter''s parameters, fill ratio, estimated items and false-positive rate'
            cand verify 'Check a filter file: its header and every data segment against its checksum'
            cand copy 'Copy a filter between a file and Redis (or Redis and Redis), byte for byte'
            cand merge 'Merge filters into one (the union of their lines), of any sizes'
            cand plan 'Show the layout, size and false-positive rate a filter would have, without writing anything'
            cand completions 'Print a completion script for a shell (bash, zsh, fish, elvish, powershell)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'seen;build'= {
            cand -o 'Filter to write: a file, or a Redis location (redis://[USER@]HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME; the password, if any, in SEEN_REDIS_PASSWORD)'
            cand --output 'Filter to write: a file, or a Redis location (redis://[USER@]HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME; the password, if any, in SEEN_REDIS_PASSWORD)'
            cand -p 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]'
            cand --fpp 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]'
            cand --growth 'When full, add a layer G times larger (2-16) [default: 2]'
            cand --window 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]'
            cand --slices 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]'
            cand --redis-layout 'How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in small Redis sets: one command per line, nothing read whole, about 4.7 bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies to and from a file byte for byte, but every run reads the shards it touches whole) [default: sets]. Only when the filter is made in Redis'
            cand --seed 'Hash seed for a new filter (decimal or 0x-hex); the default is fixed, so rebuilding from the same lines gives the same file bits'
            cand -j 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand --threads 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand -k 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand --key 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand -t 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --delimiter 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand -n 'Distinct lines to size the new filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]'
            cand --capacity 'Distinct lines to size the new filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]'
            cand --fixed 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
            cand --no-grow 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
            cand --force 'Replace FILTER if it exists (atomically, keeping its key options unless key flags are given); only a seen filter (or an empty file) is replaced'
            cand --add 'Insert into the existing FILTER instead of making a new one (sizing flags are then ignored)'
            cand --summary 'Print a summary to stderr: lines read, new, duplicates, expected false positives'
            cand --json 'With --summary: print it as one JSON object (schema in docs/JSON.md)'
            cand -z 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --null 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --no-mmap 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
            cand --trim 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
            cand --url 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
            cand --url-sort-query 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
            cand -i 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --ignore-case 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --raw-keys 'Compare whole records as they are, ignoring key options recorded in the filter'
            cand --progress 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
            cand -q 'No progress and no notes on stderr (warnings and errors still print)'
            cand --quiet 'No progress and no notes on stderr (warnings and errors still print)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'seen;query'= {
            cand -f 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)'
            cand --file 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)'
            cand -j 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand --threads 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand -k 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand --key 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand -t 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --delimiter 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand --as-keys 'Lines read from --file or standard input are keys, not records: the filter''s field selection (-k/-t) is not applied to them (its trim, URL and case rules are), as for items on the command line'
            cand -v 'Select the items that are NOT in the filter'
            cand --invert-match 'Select the items that are NOT in the filter'
            cand -c 'Print only the number of selected items'
            cand --count 'Print only the number of selected items'
            cand -q 'Print nothing; only the exit status tells'
            cand --quiet 'Print nothing; only the exit status tells'
            cand --silent 'Print nothing; only the exit status tells'
            cand --all 'Exit 0 only if every item is selected (and there is at least one)'
            cand --json 'Print one JSON object per item with its verdict (schema in docs/JSON.md), instead of the selected items'
            cand -z 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --null 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --no-mmap 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
            cand --trim 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
            cand --url 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
            cand --url-sort-query 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
            cand -i 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --ignore-case 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --raw-keys 'Compare whole records as they are, ignoring key options recorded in the filter'
            cand --progress 'Show progress on stderr even when it is not a terminal'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;forget'= {
            cand -f 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)'
            cand --file 'Read records, one per line, from FILE (`-` is standard input); may be repeated. The filter''s key options pick each record''s key (see --as-keys)'
            cand -j 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand --threads 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand -k 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand --key 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand -t 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --delimiter 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand --as-keys 'Lines read from --file or standard input are keys, not records: the filter''s field selection (-k/-t) is not applied to them (its trim, URL and case rules are), as for items on the command line'
            cand --summary 'Print a summary on stderr: items read, forgotten, not present, list size'
            cand --json 'With --summary: print it as one JSON object (schema in docs/JSON.md)'
            cand -z 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --null 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --no-mmap 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
            cand --trim 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
            cand --url 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
            cand --url-sort-query 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
            cand -i 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --ignore-case 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --raw-keys 'Compare whole records as they are, ignoring key options recorded in the filter'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;dedup'= {
            cand -f 'Persistent filter: lines recorded in earlier runs are suppressed and new ones recorded. Created if missing (sized by the flags below; at least 10M lines). A file, or a Redis location shared by many machines (redis://HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME)'
            cand --filter 'Persistent filter: lines recorded in earlier runs are suppressed and new ones recorded. Created if missing (sized by the flags below; at least 10M lines). A file, or a Redis location shared by many machines (redis://HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME)'
            cand -p 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]'
            cand --fpp 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]'
            cand --growth 'When full, add a layer G times larger (2-16) [default: 2]'
            cand --window 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]'
            cand --slices 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]'
            cand --redis-layout 'How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in small Redis sets: one command per line, nothing read whole, about 4.7 bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies to and from a file byte for byte, but every run reads the shards it touches whole) [default: sets]. Only when the filter is made in Redis'
            cand --commit-every 'With -f: record printed lines in FILTER (and let other processes at it) at least this often: a duration (500ms, 2s, 1min) or a line count (100k, 1M) [default: 1s or 1M lines, whichever comes first, but at least 16 times as long as the last commit took, which grows with the filter (the first span of a filter held in memory: as its commit is foreseen to take)]; a span (the lines recorded by one commit) ends between input chunks (4 MiB), so it holds at least one chunk, when the input pauses for 20 ms (by default, not before those 16 times), and also once 524,288 new lines wait to be recorded (bounded memory; with -m, 1,048,576 while the filter is held in memory). A line is recorded only after it was written out, so a killed run loses nothing; it may print again, in the next run, the lines of its last span'
            cand --dups-out 'Write every line that is not printed (the duplicates, and the new lines dropped as false positives) to FILE, in input order, the same bytes: the "probably seen" lines, for a second look against an exact store. With -f, a line is recorded only after both outputs it goes to were written. FILE is created or truncated'
            cand -m 'Stop after printing N lines (as `grep -m`). With -f, exactly those N are recorded, so `seen dedup -f F -m 1000 < frontier` hands out the next 1,000 new lines each run (`| head -1000` cannot: what head left unread in the pipe is not known, so the open span is not recorded). 0 reads and records nothing. Not with a Redis filter (it records lines before printing them)'
            cand --max-count 'Stop after printing N lines (as `grep -m`). With -f, exactly those N are recorded, so `seen dedup -f F -m 1000 < frontier` hands out the next 1,000 new lines each run (`| head -1000` cannot: what head left unread in the pipe is not known, so the open span is not recorded). 0 reads and records nothing. Not with a Redis filter (it records lines before printing them)'
            cand -j 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand --threads 'Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of CPUs; at most 256]. Output is identical for any value'
            cand -k 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand --key 'Compare records by field N only (1-based): fields are runs of blanks (spaces, tabs; newlines too in -z records), leading blanks ignored, as awk splits (and `sort -b -k`); with -t, split on every -t byte, as `cut -f N` does. A record with fewer fields has an empty key (as in awk)'
            cand -t 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --delimiter 'Split fields for -k on every CHAR (empty fields kept, like `cut`): one byte (e.g. '','' or '';''), ''\t'' or 0x1f [default: runs of blanks]'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand -n 'Distinct lines to size the filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]'
            cand --capacity 'Distinct lines to size the filter for (e.g. 1e6, 50k, 10M) [default: the lines in the input files, else 10M]'
            cand --fixed 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
            cand --no-grow 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
            cand --summary 'Print a summary to stderr: lines read, written, duplicates, and how many new lines were probably dropped as false positives'
            cand --json 'With --summary: print it as one JSON object (schema in docs/JSON.md)'
            cand -d 'Print each line that repeats, once, at its second occurrence (as `uniq -d`, but the repeats need not be adjacent); with -f, a line recorded in an earlier run repeats at its first occurrence here. About `p` of the lines seen once are printed too, and about `p` of the repeated ones are not (false positives of the filter, and of a second in-memory filter of the lines printed)'
            cand --repeated 'Print each line that repeats, once, at its second occurrence (as `uniq -d`, but the repeats need not be adjacent); with -f, a line recorded in an earlier run repeats at its first occurrence here. About `p` of the lines seen once are printed too, and about `p` of the repeated ones are not (false positives of the filter, and of a second in-memory filter of the lines printed)'
            cand -D 'Print every occurrence of a line after its first (each repeat): the inverse of the default (as `uniq -D` prints repeats, minus the first)'
            cand --all-repeated 'Print every occurrence of a line after its first (each repeat): the inverse of the default (as `uniq -D` prints repeats, minus the first)'
            cand -z 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --null 'Records end with NUL instead of newline (input and output), as with `find -print0`'
            cand --no-mmap 'Read input files (and a file redirected to stdin) instead of memory-mapping them: up to about 20% slower, but a file that another program truncates meanwhile (log rotation with copytruncate) just ends early, where a mapped one stops seen (exit 2)'
            cand --trim 'Strip whitespace (space, tab, CR, LF, VT, FF) around the key'
            cand --url 'Compare URLs in canonical form: scheme and host lower-cased, default port, fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that are not absolute URLs are compared as they are (counted by --summary)'
            cand --url-sort-query 'With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`)'
            cand -i 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --ignore-case 'Compare keys case-insensitively (Unicode lower case for UTF-8 keys)'
            cand --raw-keys 'Compare whole records as they are, ignoring key options recorded in the filter'
            cand --progress 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
            cand -q 'No progress and no notes on stderr (warnings and errors still print)'
            cand --quiet 'No progress and no notes on stderr (warnings and errors still print)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'seen;stats'= {
            cand --max-fpp 'Exit 1 when the estimated current false-positive rate is above P (with --probe: when the measured rate is)'
            cand --probe 'Measure the false-positive rate: look up the lines of FILE (`-`: standard input), items known never to have been inserted, and report the share found present, with its 95% confidence interval, next to the estimate'
            cand --max-fill 'Exit 1 when the fill ratio (bits set / bits, over all layers) is above F (e.g. 0.5, 50%)'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand --json 'Print one JSON object (schema in docs/STATS.md) instead of a table'
            cand --progress 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
            cand -q 'No progress and no notes on stderr (warnings and errors still print)'
            cand --quiet 'No progress and no notes on stderr (warnings and errors still print)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;verify'= {
            cand --set-clock 'Set the time of a filter file with a --window back to TIME (now: this machine''s clock; or as --now takes), after a --now too far ahead moved it; lines recorded after TIME count as recorded at TIME. What it did is said on stderr'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand --repair 'If a writer was killed (the file is dirty), first recompute its checksums and counters from its bits, as the next writer would (takes the write lock); then check. A clean file is only checked: its damage is reported, never repaired. (A dirty file''s stale checksums cannot be told from damage: --repair trusts its bits.) For a Redis filter: removes the journals on this machine of an earlier filter at that location (deleted or made again), which can never be replayed'
            cand --progress 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
            cand -q 'No progress and no notes on stderr (warnings and errors still print)'
            cand --quiet 'No progress and no notes on stderr (warnings and errors still print)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;copy'= {
            cand --zstd 'Compress a copy into a file or through a pipe with zstd (--zstd=LEVEL: 1-19) [default: 3]'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand --force 'Replace a filter already at TO'
            cand --progress 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
            cand -q 'No progress and no notes on stderr (warnings and errors still print)'
            cand --quiet 'No progress and no notes on stderr (warnings and errors still print)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;merge'= {
            cand -o 'The merged filter: a file, or a Redis location. A file may be one of the inputs (replaced by the union); a Redis input, or any other filter already there, needs --force'
            cand --output 'The merged filter: a file, or a Redis location. A file may be one of the inputs (replaced by the union); a Redis input, or any other filter already there, needs --force'
            cand --wait 'Give up (exit 2) when another process has held the filter''s lock for DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does [default: wait as long as it takes, saying so on stderr after 1 s]'
            cand --redis-timeout 'With a Redis filter (redis://...): give up (exit 2) when a server has not answered, or could not be reached again, for DURATION (500ms, 10s, 1min) [default: 10s]'
            cand --redis-wait 'With a Redis filter that this run writes: before printing a batch''s lines, wait until N replicas of each server hold its writes (Redis WAIT, for at most --redis-timeout), so that a failover to one of them forgets no printed line; fewer replicas in time: the batch is printed and the run stops, exit 2 [default: 0, no wait]'
            cand --now 'The time to work at, for a filter with a --window: an RFC 3339 time (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix seconds (@1796115600); for replays, tests and scripts. A time before the latest a writer recorded in the filter counts as that time [default: the system clock]'
            cand --force 'Replace a filter already at OUT that is not one of the inputs'
            cand --progress 'Show progress on stderr even when it is not a terminal (by default it is shown only on a terminal, and only for work that lasts over a second)'
            cand -q 'No progress and no notes on stderr (warnings and errors still print)'
            cand --quiet 'No progress and no notes on stderr (warnings and errors still print)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;plan'= {
            cand -p 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]'
            cand --fpp 'Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new line is taken for a seen one. A growing filter stays under it at any size; a fixed one meets it up to its capacity [default: 1e-6]'
            cand --growth 'When full, add a layer G times larger (2-16) [default: 2]'
            cand --window 'Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line recorded at time t is seen until t + W and new again from t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per window. Recorded in the filter, which every later command follows [default: never forget]'
            cand --slices 'Slices of a --window (1-32): lines are forgotten a slice at a time, at most W/S after the window [default: 8]'
            cand --layers 'How many layers of a growing filter to show'
            cand -n 'Distinct lines to plan for (e.g. 1e6, 50k, 10M) [default: 10M]'
            cand --capacity 'Distinct lines to plan for (e.g. 1e6, 50k, 10M) [default: 10M]'
            cand --fixed 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
            cand --no-grow 'Never grow: one layer of -n lines; past it the false-positive rate rises (warned on stderr when it passes -p, and again past 10 times -p)'
            cand --classic 'Also show the textbook classic (unblocked) Bloom filter for -n and -p'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'seen;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'seen;help'= {
            cand build 'Make a filter file from lines (files or standard input)'
            cand query 'Ask a filter whether items are (probably) in it, grep-style'
            cand forget 'Forget items: a filter answers them as absent until they are recorded again'
            cand dedup 'Print each line only the first time it is seen, in input order'
            cand stats 'Report a filter''s parameters, fill ratio, estimated items and false-positive rate'
            cand verify 'Check a filter file: its header and every data segment against its checksum'
            cand copy 'Copy a filter between a file and Redis (or Redis and Redis), byte for byte'
            cand merge 'Merge filters into one (the union of their lines), of any sizes'
            cand plan 'Show the layout, size and false-positive rate a filter would have, without writing anything'
            cand completions 'Print a completion script for a shell (bash, zsh, fish, elvish, powershell)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'seen;help;build'= {
        }
        &'seen;help;query'= {
        }
        &'seen;help;forget'= {
        }
        &'seen;help;dedup'= {
        }
        &'seen;help;stats'= {
        }
        &'seen;help;verify'= {
        }
        &'seen;help;copy'= {
        }
        &'seen;help;merge'= {
        }
        &'seen;help;plan'= {
        }
        &'seen;help;completions'= {
        }
        &'seen;help;help'= {
        }
    ]
    $completions[$command]
}
