//! Scanning Go templates Tazuna does not render itself (helm charts,
//! helmfiles, the values given to them) for the functions they call.
//!
//! One place for the engine and the plugins: the engine refuses repository
//! content that would run a program, and a source plugin tells the host
//! whether its render is deterministic (the WIT `render-traits` import) by
//! looking for the functions that draw a value anew. Plain `std`, so it runs
//! on the host and inside a WebAssembly component alike.
#![deny(missing_docs)]

/// The first call of one of `functions` inside a template action (`{{ … }}`)
/// of `text`, with its line. String literals are skipped, and a word after
/// `.` or `$` is a field or a variable, not a call. Used to scan files Tazuna
/// does not render itself: charts and helmfiles.
pub fn first_call(text: &str, functions: &[&'static str]) -> Option<(usize, &'static str)> {
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find("{{") {
        let action = &rest[start + 2..];
        let end = action.find("}}").unwrap_or(action.len());
        let inside = &action[..end];
        let base = offset + start + 2;
        let mut index = 0;
        let bytes = inside.as_bytes();
        while index < bytes.len() {
            let byte = bytes[index];
            if byte == b'"' || byte == b'`' {
                // Skip a string literal.
                let close = inside[index + 1..]
                    .find(byte as char)
                    .map_or(bytes.len(), |at| index + 1 + at + 1);
                index = close;
                continue;
            }
            if byte.is_ascii_alphabetic() || byte == b'_' {
                let word_end = inside[index..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(bytes.len(), |at| index + at);
                let word = &inside[index..word_end];
                let after_field = index > 0 && matches!(bytes[index - 1], b'.' | b'$');
                if !after_field && let Some(found) = functions.iter().find(|f| **f == word) {
                    let line = text[..base + index].matches('\n').count() + 1;
                    return Some((line, found));
                }
                index = word_end;
                continue;
            }
            index += 1;
        }
        let consumed = start + 2 + end;
        offset += consumed;
        rest = &rest[consumed..];
    }
    None
}

/// The template functions whose output differs between two renders of the
/// same inputs: sprig's random and clock functions, and helm's key and
/// certificate generators.
pub const DRAWN_ANEW: &[&str] = &[
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randBytes",
    "randInt",
    "uuidv4",
    "shuffle",
    "now",
    "htpasswd",
    "bcrypt",
    "encryptAES",
    "getHostByName",
    "genCA",
    "genCAWithKey",
    "genPrivateKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    // helmfile's, in a `.gotmpl` values file: it runs a command.
    "exec",
];

/// More than this much chart to read, or more files than [`SCAN_FILES`], and
/// it is taken to draw values anew.
pub const SCAN_LIMIT: u64 = 64 * 1024 * 1024;

/// See [`SCAN_LIMIT`].
pub const SCAN_FILES: usize = 10_000;

/// Whether a chart directory and the values given to it may draw a value
/// anew on each render: some template action (`{{ … }}`) in a file of the
/// chart (its subcharts, values and helpers included) or in `values` (the
/// texts of values files and inline values, which `tpl` can render) names
/// one of the functions that do. Anything that cannot be read as text, a
/// chart archive (a packed subchart), a symbolic link or more than 64 MiB is
/// taken to draw anew: a second render then finds out. So is anything that
/// is not a directory or a regular file (a FIFO, a device), and a chart of
/// more than 10,000 files.
pub fn may_draw_anew(chart: &std::path::Path, values: &[String]) -> bool {
    if values.iter().any(|text| draws_anew(text)) {
        return true;
    }
    let mut read = 0u64;
    let mut files = 0usize;
    let mut pending = vec![chart.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return true;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                return true;
            };
            let Ok(kind) = entry.file_type() else {
                return true;
            };
            if kind.is_dir() {
                pending.push(entry.path());
                continue;
            }
            if !kind.is_file() {
                return true;
            }
            // Sized before it is read: a huge file costs nothing.
            let Ok(metadata) = entry.metadata() else {
                return true;
            };
            files += 1;
            read = read.saturating_add(metadata.len());
            if read > SCAN_LIMIT || files > SCAN_FILES {
                return true;
            }
            let Ok(bytes) = std::fs::read(entry.path()) else {
                return true;
            };
            match std::str::from_utf8(&bytes) {
                Ok(text) if !draws_anew(text) => {}
                _ => return true,
            }
        }
    }
    false
}

/// Whether a template action in `text` calls a function of [`DRAWN_ANEW`].
pub fn draws_anew(text: &str) -> bool {
    first_call(text, DRAWN_ANEW).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_found_with_its_line_and_fields_variables_and_strings_are_not_calls() {
        let text = "a: {{ .now }}\nb: {{ $now }}\nc: {{ \"now\" }}\nd: {{ now | date \"2006\" }}\n";
        assert_eq!(first_call(text, &["now"]), Some((4, "now")));
        assert_eq!(first_call("{{ nowhere }} now", &["now"]), None);
        assert!(draws_anew("{{- randAlphaNum 8 }}"));
        assert!(!draws_anew("randAlphaNum outside an action"));
    }

    #[test]
    fn a_chart_that_calls_a_random_function_may_draw_anew_and_one_without_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path();
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::create_dir_all(chart.join("charts/sub/templates")).unwrap();
        std::fs::write(chart.join("Chart.yaml"), "name: app\nversion: 0.1.0\n").unwrap();
        std::fs::write(
            chart.join("templates/cm.yaml"),
            "# known, unknown and now in a comment are not calls\ndata:\n  at: {{ .Values.now | quote }}\n  v: {{ $now := 1 }}{{ $now }}\n",
        )
        .unwrap();
        std::fs::write(
            chart.join("charts/sub/templates/s.yaml"),
            "x: {{ include \"a\" . }}\n",
        )
        .unwrap();
        assert!(!may_draw_anew(chart, &[]));
        assert!(may_draw_anew(
            chart,
            &["password: '{{ randAlphaNum 16 }}'".to_owned()]
        ));

        std::fs::write(
            chart.join("charts/sub/templates/s.yaml"),
            "ca: {{- $ca := genCA \"x\" 365 }}{{ $ca.Cert | b64enc }}\n",
        )
        .unwrap();
        assert!(may_draw_anew(chart, &[]), "a subchart's genCA");
        std::fs::write(
            chart.join("charts/sub/templates/s.yaml"),
            "at: {{ now | date \"2006\" }}\n",
        )
        .unwrap();
        assert!(may_draw_anew(chart, &[]), "now");
        std::fs::remove_file(chart.join("charts/sub/templates/s.yaml")).unwrap();
        assert!(!may_draw_anew(chart, &[]));

        // A file built to exhaust memory is sized, not read (sparse: no disk).
        let huge = std::fs::File::create(chart.join("templates/huge.yaml")).unwrap();
        huge.set_len(64 * 1024 * 1024 * 1024).unwrap();
        assert!(may_draw_anew(chart, &[]), "over the limit");
        std::fs::remove_file(chart.join("templates/huge.yaml")).unwrap();
        assert!(!may_draw_anew(chart, &[]));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/dev/zero", chart.join("templates/zero.yaml")).unwrap();
            assert!(may_draw_anew(chart, &[]), "a link is not followed");
            std::fs::remove_file(chart.join("templates/zero.yaml")).unwrap();
        }

        std::fs::write(chart.join("charts/dep-1.0.0.tgz"), [0x1f, 0x8b, 0x08, 0x00]).unwrap();
        assert!(may_draw_anew(chart, &[]), "a packed subchart is not read");
        assert!(may_draw_anew(&chart.join("missing"), &[]));
    }
}
