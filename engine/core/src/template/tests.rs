use serde_json::json;

use super::*;

fn data() -> Value {
    json!({
        "Environment": "production",
        "Cluster": { "Name": "prod-tokyo", "Labels": { "env": "production", "region": "tokyo" } },
        "Values": { "replicas": 3, "features": ["a", "b"], "debug": false, "name": "web" },
    })
}

fn ok(text: &str) -> String {
    render(text, &data()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn a_partial_render_leaves_out_what_it_cannot_evaluate_and_keeps_the_rest() {
    let data = json!({ "Environment": "staging", "Values": {} });
    let text = "env: {{ .Environment }}\nreplicas: {{ .Values.replicas }}\n{{ if gt .Values.replicas 1 }}big: true\n{{ else }}small: true\n{{ end }}{{ range .Values.zones }}- {{ . }}\n{{ end }}{{ with .Cluster.Name }}name: {{ . }}{{ end }}done";
    assert_eq!(
        render_partial(text, &data).unwrap(),
        "env: staging\nreplicas: \ndone"
    );
    assert!(render(text, &data).is_err(), "a full render still refuses");
    // Syntax errors and bounds still fail.
    assert!(render_partial("{{ if }}", &data).is_err());
    assert!(render_partial("{{ range .Values.x }}", &data).is_err());
}

#[test]
fn go_tazuna_files_render_as_go_renders_them() {
    assert_eq!(
        ok("path: ./overlays/{{ .Environment }}"),
        "path: ./overlays/production"
    );
    assert_eq!(
        ok("{{ if eq .Environment \"production\" }}replicas: 5{{ else }}replicas: 1{{ end }}"),
        "replicas: 5"
    );
    assert_eq!(
        ok(
            "{{ if eq .Environment \"staging\" }}a{{ else if eq .Cluster.Labels.region \"tokyo\" }}b{{ else }}c{{ end }}"
        ),
        "b"
    );
    assert_eq!(
        ok("region: {{ .Cluster.Labels.region | quote }}"),
        "region: \"tokyo\""
    );
    assert_eq!(
        ok("{{ range .Values.features }}- {{ . }}\n{{ end }}"),
        "- a\n- b\n"
    );
    assert_eq!(
        ok("{{ with .Cluster.Labels }}{{ .env }}{{ end }}"),
        "production"
    );
    assert_eq!(ok("a:\n  {{- if .Values.debug }} x{{ end }}\nb"), "a:\nb");
    assert_eq!(ok("{{ .Values.replicas -}}   \n  next"), "3next");
    assert_eq!(ok("{{/* a comment */}}x"), "x");
    assert_eq!(
        ok("{{ printf \"%s-%d\" .Values.name .Values.replicas }}"),
        "web-3"
    );
    assert_eq!(
        ok("{{ default \"x\" .Values.debug }} {{ len .Values.features }}"),
        "x 2"
    );
    assert_eq!(
        ok("{{ and (gt .Values.replicas 2) (not .Values.debug) }}"),
        "true"
    );
    assert_eq!(
        ok("{{ index .Cluster.Labels \"env\" }} {{ $.Environment }}"),
        "production production"
    );
    assert_eq!(ok("no actions: {not one}"), "no actions: {not one}");
}

#[test]
fn a_missing_key_is_an_error_with_its_line_and_column() {
    let error = render("a: 1\nb: {{ .Values.regoin }}\n", &data()).unwrap_err();
    assert_eq!((error.line, error.column), (2, 7));
    assert_eq!(
        error.message,
        "map has no entry for key `regoin` in `.Values.regoin` (it has `debug`, `features`, `name`, `replicas`)"
    );
    let error = render("{{ .Environment.Name }}", &data()).unwrap_err();
    assert_eq!(
        error.message,
        "`.Environment` is a string, which has no field `Name`"
    );
}

#[test]
fn malformed_templates_are_refused_with_a_position() {
    for (text, message) in [
        ("{{ if .Values.debug }}x", "`if` without `{{ end }}`"),
        ("x {{ end }}", "`{{ end }}` without a block to close"),
        ("{{ .Values.name", "unclosed action: `{{` without `}}`"),
        ("{{ nosuch 1 }}", "function `nosuch` not defined"),
        ("{{ \"open }}", "unterminated quoted string"),
        (
            "{{ $x := 1 }}",
            "variables are not supported (`$x`); use `$.` or `.`",
        ),
        (
            "{{ define \"x\" }}{{ end }}",
            "`define` is not supported in tazuna.yaml",
        ),
    ] {
        let error = render(text, &data()).unwrap_err();
        assert_eq!(error.message, message, "{text}");
    }
}

#[test]
fn hostile_nesting_and_output_are_bounded() {
    let deep = format!(
        "{}x{}",
        "{{ if true }}".repeat(200),
        "{{ end }}".repeat(200)
    );
    let error = render(&deep, &data()).unwrap_err();
    assert!(
        error.message.contains("nested deeper than 64 levels"),
        "{error}"
    );
    let parens = format!("{{{{ {}1{} }}}}", "(".repeat(200), ")".repeat(200));
    assert!(
        render(&parens, &data())
            .unwrap_err()
            .message
            .contains("nested deeper")
    );
    // A range that would write far past the output cap stops at it.
    let wide = json!({ "Values": { "many": vec![0; 5000] } });
    let text = format!(
        "{{{{ range .Values.many }}}}{{{{ range $.Values.many }}}}{}{{{{ end }}}}{{{{ end }}}}",
        "x".repeat(4096)
    );
    assert!(
        render(&text, &wide)
            .unwrap_err()
            .message
            .contains("renders more than")
    );
}
