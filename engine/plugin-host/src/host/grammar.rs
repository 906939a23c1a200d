//! What a plugin may ask of the tools the host knows (`helm`, `kustomize`,
//! `helmfile`), read with the tools' own grammar (cobra and pflag): global
//! flags, then the subcommand, then its flags and positionals.
//!
//! Each tool's grammar is an allow-list: the subcommands a render needs, and
//! for each the flags it may take, with whether a flag takes a value (so
//! `helm -n template push` reads as `push`, the subcommand helm would run).
//! A flag the list does not name, in any spelling (`--name value`,
//! `--name=value`, `-x value`, `-xvalue`, `-x=value`, shorthands run together
//! as `-qb`), is refused, so a flag that runs a program (`--post-renderer`,
//! helmfile's `--helm-binary`), reaches a cluster (`--kubeconfig`,
//! `--kube-*`) or moves the tool's configuration is refused by not being
//! there.

/// One flag: its long name, its one-letter shorthand, and whether it takes a
/// value.
#[derive(Debug, Clone, Copy)]
struct Flag {
    long: &'static str,
    short: Option<char>,
    value: bool,
}

const fn value(long: &'static str) -> Flag {
    Flag {
        long,
        short: None,
        value: true,
    }
}

const fn switch(long: &'static str) -> Flag {
    Flag {
        long,
        short: None,
        value: false,
    }
}

const fn short(flag: Flag, letter: char) -> Flag {
    Flag {
        short: Some(letter),
        ..flag
    }
}

/// A subcommand (with the second word it needs, for `helm show values`
/// and `helm dependency build`) and its flags, in groups.
struct Subcommand {
    name: &'static str,
    words: &'static [&'static str],
    flags: &'static [&'static [Flag]],
}

/// A tool's grammar.
struct Grammar {
    tool: &'static str,
    /// Flags that may come anywhere (cobra's persistent flags).
    global: &'static [Flag],
    subcommands: &'static [Subcommand],
    /// Prefixes of the plugin's environment variables the tool gets.
    env: &'static [&'static str],
}

/// Flags of helm's chart lookups (a repository, a registry, a version).
const HELM_CHART: &[Flag] = &[
    value("repo"),
    value("version"),
    switch("devel"),
    switch("plain-http"),
    switch("insecure-skip-tls-verify"),
    value("ca-file"),
    value("cert-file"),
    value("key-file"),
    switch("verify"),
    value("keyring"),
];

/// Flags of helm's values.
const HELM_VALUES: &[Flag] = &[
    short(value("values"), 'f'),
    value("set"),
    value("set-string"),
    value("set-file"),
    value("set-json"),
    value("set-literal"),
];

const HELM_TEMPLATE: &[Flag] = &[
    short(value("api-versions"), 'a'),
    value("kube-version"),
    switch("include-crds"),
    switch("skip-crds"),
    switch("skip-tests"),
    switch("skip-schema-validation"),
    switch("no-hooks"),
    switch("is-upgrade"),
    switch("create-namespace"),
    switch("dependency-update"),
    switch("disable-openapi-validation"),
    switch("release-name"),
    switch("render-subchart-notes"),
    switch("hide-notes"),
    short(switch("generate-name"), 'g'),
    value("name-template"),
    value("description"),
    short(value("show-only"), 's'),
    value("output-dir"),
    value("timeout"),
    value("labels"),
];

const HELM: Grammar = Grammar {
    tool: "helm",
    global: &[switch("debug"), short(value("namespace"), 'n')],
    subcommands: &[
        Subcommand {
            name: "template",
            words: &[],
            flags: &[HELM_CHART, HELM_VALUES, HELM_TEMPLATE],
        },
        Subcommand {
            name: "show",
            words: &["all", "chart", "crds", "readme", "values"],
            flags: &[HELM_CHART, &[value("jsonpath")]],
        },
        Subcommand {
            name: "pull",
            words: &[],
            flags: &[
                HELM_CHART,
                &[
                    short(value("destination"), 'd'),
                    switch("untar"),
                    value("untardir"),
                    switch("prov"),
                ],
            ],
        },
        Subcommand {
            name: "dependency",
            words: &["build", "update", "list"],
            flags: &[&[switch("skip-refresh"), switch("verify"), value("keyring")]],
        },
        Subcommand {
            name: "version",
            words: &[],
            flags: &[&[switch("short"), value("template")]],
        },
        Subcommand {
            name: "lint",
            words: &[],
            flags: &[
                HELM_VALUES,
                &[
                    switch("strict"),
                    switch("quiet"),
                    switch("with-subcharts"),
                    value("kube-version"),
                ],
            ],
        },
        Subcommand {
            name: "package",
            words: &[],
            flags: &[&[
                short(value("destination"), 'd'),
                value("version"),
                value("app-version"),
                short(switch("dependency-update"), 'u'),
            ]],
        },
    ],
    env: &[],
};

const KUSTOMIZE: Grammar = Grammar {
    tool: "kustomize",
    global: &[switch("stack-trace")],
    subcommands: &[
        Subcommand {
            name: "build",
            words: &[],
            flags: &[&[
                short(value("output"), 'o'),
                value("reorder"),
                switch("enable-managedby-label"),
            ]],
        },
        Subcommand {
            name: "version",
            words: &[],
            flags: &[&[short(value("output"), 'o')]],
        },
    ],
    env: &[],
};

/// Flags of helmfile's releases' values.
const HELMFILE_VALUES: &[Flag] = &[
    value("values"),
    value("set"),
    switch("skip-deps"),
    value("concurrency"),
];

const HELMFILE: Grammar = Grammar {
    tool: "helmfile",
    global: &[
        short(value("file"), 'f'),
        short(value("environment"), 'e'),
        value("state-values-file"),
        value("state-values-set"),
        value("state-values-set-string"),
        short(value("selector"), 'l'),
        short(value("namespace"), 'n'),
        short(value("chart"), 'c'),
        switch("no-color"),
        switch("color"),
        switch("oci-plain-http"),
        switch("debug"),
        short(switch("quiet"), 'q'),
        value("log-level"),
        switch("allow-no-matching-release"),
        switch("skip-refresh"),
        switch("disable-force-update"),
    ],
    subcommands: &[
        Subcommand {
            name: "template",
            words: &[],
            flags: &[
                HELMFILE_VALUES,
                &[
                    switch("include-crds"),
                    switch("skip-tests"),
                    switch("skip-needs"),
                    switch("include-needs"),
                    switch("include-transitive-needs"),
                    switch("skip-cleanup"),
                    switch("skip-schema-validation"),
                    switch("no-hooks"),
                    value("output-dir"),
                    value("output-dir-template"),
                    value("kube-version"),
                    value("show-only"),
                ],
            ],
        },
        Subcommand {
            name: "build",
            words: &[],
            flags: &[&[switch("embed-values")]],
        },
        Subcommand {
            name: "version",
            words: &[],
            flags: &[&[short(value("output"), 'o')]],
        },
        Subcommand {
            name: "list",
            words: &[],
            flags: &[&[value("output"), switch("skip-charts")]],
        },
        Subcommand {
            name: "lint",
            words: &[],
            flags: &[HELMFILE_VALUES],
        },
        Subcommand {
            name: "write-values",
            words: &[],
            flags: &[HELMFILE_VALUES, &[value("output-file-template")]],
        },
    ],
    // HELMFILE_RENDER_YAML: a helmfile read from stdin is a template.
    env: &["TAZUNA_VAR_", "HELMFILE_RENDER_YAML"],
};

const GRAMMARS: &[Grammar] = &[HELM, KUSTOMIZE, HELMFILE];

/// Whether a plugin may set `key` for a tool whose grammar the host does
/// not know: the tool's own variables (`JSONNET_PATH` for `jsonnet`, named
/// after the tool) and `TAZUNA_*`, nothing else. The loader's (`LD_*`) are
/// never a tool's own, whatever it is called. Everything that makes a program
/// load code or configuration from elsewhere, reach another host or find
/// other programs (`PATH`, `HOME`, proxies, `PYTHONPATH` for a tool that is
/// not python) is refused by not being named.
fn own_variable(tool: &str, key: &str) -> bool {
    let own = format!("{}_", tool.to_ascii_uppercase().replace(['-', '.'], "_"));
    !key.starts_with("LD_") && (key.starts_with("TAZUNA_") || key.starts_with(&own))
}

/// What is wrong with asking `tool` for `args` with `env`, if anything.
pub fn refused(tool: &str, args: &[String], env: &[(String, String)]) -> Option<String> {
    let grammar = GRAMMARS.iter().find(|grammar| grammar.tool == tool);
    let allowed_env = |key: &str| match grammar {
        Some(grammar) => grammar.env.iter().any(|prefix| key.starts_with(prefix)),
        None => own_variable(tool, key),
    };
    if let Some((key, _)) = env.iter().find(|(key, _)| !allowed_env(key)) {
        return Some(format!(
            "environment variable `{key}`, which it does not pass to tools"
        ));
    }
    grammar?.read(args).err()
}

/// The subcommand `args` run `tool` with (`build` for `helmfile --file=f
/// build`), read with the tool's grammar; `None` for a tool the host does not
/// know or arguments it refuses.
pub fn subcommand(tool: &str, args: &[String]) -> Option<&'static str> {
    let grammar = GRAMMARS.iter().find(|grammar| grammar.tool == tool)?;
    grammar.read(args).ok().flatten()
}

impl Grammar {
    /// Read `args` as the tool would: every flag must be one the grammar
    /// names for where it stands. The subcommand, if there is one.
    fn read(&self, args: &[String]) -> Result<Option<&'static str>, String> {
        let mut subcommand: Option<&Subcommand> = None;
        let mut words_left = false;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if arg == "--" {
                break;
            }
            if arg.len() > 1 && arg.starts_with('-') {
                let flags = |flag: &dyn Fn(&Flag) -> bool| -> Option<Flag> {
                    self.global
                        .iter()
                        .chain(
                            subcommand
                                .into_iter()
                                .flat_map(|s| s.flags.iter().copied().flatten()),
                        )
                        .find(|f| flag(f))
                        .copied()
                };
                if let Some(long) = arg.strip_prefix("--") {
                    let (name, inline) = match long.split_once('=') {
                        Some((name, _)) => (name, true),
                        None => (long, false),
                    };
                    let Some(flag) = flags(&|f| f.long == name) else {
                        return Err(self.unknown_flag(arg, subcommand));
                    };
                    if flag.value && !inline {
                        args.next();
                    }
                } else {
                    let letters = &arg[1..];
                    for (at, letter) in letters.char_indices() {
                        let Some(flag) = flags(&|f| f.short == Some(letter)) else {
                            return Err(self.unknown_flag(&format!("-{letter}"), subcommand));
                        };
                        if flag.value {
                            // The rest of the word is the value, or else the next word.
                            if at + letter.len_utf8() == letters.len() {
                                args.next();
                            }
                            break;
                        }
                    }
                }
                continue;
            }
            match subcommand {
                None => {
                    let Some(found) = self.subcommands.iter().find(|s| s.name == arg) else {
                        return Err(self.unknown_subcommand(arg));
                    };
                    subcommand = Some(found);
                    words_left = !found.words.is_empty();
                }
                Some(found) if words_left => {
                    if !found.words.contains(&arg.as_str()) {
                        return Err(format!(
                            "`{} {} {arg}`; plugins may run only `{} {} {}`",
                            self.tool,
                            found.name,
                            self.tool,
                            found.name,
                            found.words.join("|")
                        ));
                    }
                    words_left = false;
                }
                // A positional: a release name, a chart, a directory.
                Some(_) => {}
            }
        }
        Ok(subcommand.map(|found| found.name))
    }

    fn unknown_subcommand(&self, given: &str) -> String {
        let names: Vec<&str> = self.subcommands.iter().map(|s| s.name).collect();
        format!(
            "`{} {given}`; plugins may run only `{} {}` (before the subcommand, only the global flags a render needs: {})",
            self.tool,
            self.tool,
            names.join("|"),
            self.global
                .iter()
                .map(|flag| format!("`--{}`", flag.long))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    fn unknown_flag(&self, given: &str, subcommand: Option<&Subcommand>) -> String {
        let place = match subcommand {
            Some(found) => format!("`{} {}`", self.tool, found.name),
            None => format!("`{}` before its subcommand", self.tool),
        };
        format!(
            "`{given}`, which is not among the flags a render needs of {place}: Tazuna names the flags a plugin may pass, so none runs another program, reaches a cluster or reads configuration from elsewhere"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_args(tool: &str, args: &[&str]) -> Option<String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        refused(tool, &args, &[])
    }

    #[test]
    fn what_the_built_in_plugins_send_is_allowed() {
        for (tool, args) in [
            (
                "helm",
                &[
                    "template",
                    "demo",
                    "/manifest/chart",
                    "--namespace=apps",
                    "--include-crds",
                    "--values=/scratch/v.json",
                    "--kube-version=v1.37.2",
                    "--api-versions=apps/v1,v1",
                ][..],
            ),
            (
                "helm",
                &[
                    "template",
                    "hello",
                    "hello",
                    "--repo=https://charts.example",
                    "--version=1.2.3",
                    "--plain-http",
                ],
            ),
            (
                "helm",
                &[
                    "pull",
                    "hello",
                    "--repo=http://r",
                    "--version=1",
                    "--destination=/scratch/c",
                ],
            ),
            (
                "helm",
                &["show", "values", "oci://r/c", "--version", "1.0.0"],
            ),
            ("helm", &["dependency", "build", "/scratch/chart"]),
            ("helm", &["version", "--short"]),
            ("kustomize", &["build", "/manifest/overlay"]),
            (
                "helmfile",
                &[
                    "--file=/manifest/helmfile",
                    "--no-color",
                    "--environment=staging",
                    "--state-values-file=/scratch/s.json",
                    "--selector=tier=platform",
                    "--oci-plain-http",
                    "template",
                    "--skip-deps",
                    "--include-crds",
                    "--kube-version=v1.37.2",
                    "--values=/manifest/common.yaml",
                    "--output-dir=/scratch/rendered",
                    "--output-dir-template={{ .OutputDir }}/{{ .Release.Name }}",
                ],
            ),
            (
                "helmfile",
                &["--file=/manifest/helmfile.yaml", "--no-color", "build"],
            ),
            (
                "helmfile",
                &["-f", "/manifest/h.yaml", "-e", "prod", "template"],
            ),
        ] {
            assert_eq!(refused_args(tool, args), None, "{tool} {args:?}");
        }
    }

    #[test]
    fn the_subcommand_is_the_one_the_tool_would_run_whatever_comes_before_it() {
        // `-n` takes the next word: helm would run `push`.
        for args in [
            &["-n", "template", "push", "x"][..],
            &["--namespace", "template", "push"],
            &["-ntemplate", "push"],
            &["--debug", "-n", "x", "push", "chart.tgz", "oci://r"],
            &["--namespace=template", "registry", "login"],
        ] {
            let said = refused_args("helm", args).unwrap_or_else(|| panic!("{args:?} passed"));
            assert!(said.contains("may run only `helm template|"), "{said}");
        }
        // Every global flag, in every spelling, before an allowed subcommand.
        for args in [
            &["-n", "x", "template", "r", "c"][..],
            &["-nx", "template", "r", "c"],
            &["-n=x", "template", "r", "c"],
            &["--namespace", "x", "--debug", "template", "r", "c"],
            &["--debug=true", "template", "r", "c"],
        ] {
            assert_eq!(refused_args("helm", args), None, "{args:?}");
        }
    }

    #[test]
    fn a_flag_the_grammar_does_not_name_is_refused_in_every_spelling() {
        for (tool, args) in [
            (
                "helm",
                &["template", "x", "c", "--post-renderer=/bin/sh"][..],
            ),
            (
                "helm",
                &["template", "x", "c", "--post-renderer", "/bin/sh"],
            ),
            ("helm", &["--kubeconfig=/k", "template", "x", "c"]),
            (
                "helm",
                &["template", "x", "c", "--kube-apiserver", "https://k"],
            ),
            (
                "helm",
                &[
                    "template",
                    "x",
                    "c",
                    "--registry-config=/root/.docker/config.json",
                ],
            ),
            ("helm", &["template", "x", "c", "--enable-dns"]),
            ("helm", &["template", "x", "c", "--pass-credentials"]),
            ("helm", &["template", "x", "c", "--username=u"]),
            (
                "kustomize",
                &["build", "--enable-helm", "--helm-command=/bin/sh"],
            ),
            (
                "kustomize",
                &["build", "--load-restrictor", "LoadRestrictionsNone"],
            ),
            ("kustomize", &["build", "-e", "X=1"]),
            ("kustomize", &["build", "--enable-exec"]),
            ("helmfile", &["--helm-binary=/bin/sh", "template"]),
            ("helmfile", &["--helm-binary", "/bin/sh", "template"]),
            ("helmfile", &["-b", "/bin/sh", "template"]),
            ("helmfile", &["-b/bin/sh", "template"]),
            ("helmfile", &["-qb", "/bin/sh", "template"]),
            ("helmfile", &["-b=/bin/sh", "template"]),
            ("helmfile", &["-k", "/bin/sh", "template"]),
            ("helmfile", &["template", "--kustomize-binary=/bin/sh"]),
            ("helmfile", &["template", "--args=--post-renderer=/bin/sh"]),
            ("helmfile", &["template", "--post-renderer", "/bin/sh"]),
            ("helmfile", &["--kube-context=prod", "template"]),
            ("helmfile", &["-i", "template"]),
        ] {
            let said = refused_args(tool, args).unwrap_or_else(|| panic!("{tool} {args:?} passed"));
            assert!(said.contains("not among the flags"), "{said}");
        }
    }

    #[test]
    fn a_value_may_look_like_a_flag_and_a_positional_may_follow_the_flags() {
        // pflag takes the next word as the value, whatever it looks like.
        assert_eq!(
            refused_args(
                "helm",
                &["template", "x", "c", "--set", "--post-renderer=/bin/sh"]
            ),
            None
        );
        assert_eq!(
            refused_args("helm", &["template", "x", "c", "-f", "-"]),
            None
        );
        assert_eq!(refused_args("helmfile", &["-qe", "prod", "template"]), None);
        assert_eq!(
            refused_args("helm", &["template", "--", "--not-a-flag", "c"]),
            None
        );
    }

    #[test]
    fn helm_show_and_dependency_take_only_their_own_second_word() {
        assert!(refused_args("helm", &["show", "everything", "c"]).is_some());
        assert!(refused_args("helm", &["dependency", "add", "c"]).is_some());
        assert_eq!(refused_args("helm", &["show", "chart", "c"]), None);
    }

    #[test]
    fn a_plugin_passes_a_tool_only_the_variables_it_allows() {
        let env = |tool: &str, key: &str| refused(tool, &[], &[(key.to_owned(), "x".to_owned())]);
        assert!(env("kustomize", "GIT_SSH_COMMAND").is_some());
        assert!(env("helm", "HELM_PLUGINS").is_some());
        assert_eq!(env("helmfile", "TAZUNA_VAR_0"), None);
        // A tool the host has no grammar for: its own variables and
        // `TAZUNA_*`, nothing else, in any spelling of a loader's variable.
        assert_eq!(env("echo", "ECHO_GREETING"), None);
        assert_eq!(env("jsonnet", "JSONNET_PATH"), None);
        assert_eq!(env("my-tool", "MY_TOOL_MODE"), None);
        assert_eq!(env("echo", "TAZUNA_GREETING"), None);
        for key in [
            "GREETING",
            "LD_PRELOAD",
            "LD_AUDIT",
            "PYTHONPATH",
            "PERL5OPT",
            "NODE_OPTIONS",
            "BASH_ENV",
            "ENV",
            "PATH",
            "HOME",
            "https_proxy",
            "GCONV_PATH",
            "LOCPATH",
            "MALLOC_CONF",
        ] {
            assert!(env("echo", key).is_some(), "{key}");
        }
        assert!(env("ld", "LD_PRELOAD").is_some(), "a tool named ld still");
    }
}
