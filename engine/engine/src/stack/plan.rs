//! `plan` and drift: what an apply would change, through server-side dry
//! runs, without a write.

use super::*;

impl Stack {
    /// Compare the file with the cluster (`plan`, `state drift`) or with the
    /// state (`state diff`), for the stack's own records only. Refuses what
    /// apply would refuse.
    pub async fn plan(
        &self,
        connection: &Connection,
        question: Question,
    ) -> Result<Report, RunError> {
        let span = self.run_span(question.verb(), &connection.cluster);
        let work = async {
            let ordered = self.ordered()?;
            let rendered = self.render_on(&ordered, &connection.cluster).await?;
            let mut errors = Vec::new();
            let mut intents_rendered = Vec::new();
            for (manifest, result) in ordered.iter().zip(rendered) {
                match result {
                    Ok(r) => intents_rendered.push((*manifest, r)),
                    Err(error) => errors.push(error),
                }
            }
            if !errors.is_empty() {
                return Err(RunError::Render(errors));
            }
            let states = self.states(connection).await?;
            let pairs: Vec<(&Manifest, &Rendered)> =
                intents_rendered.iter().map(|(m, r)| (*m, r)).collect();
            let claims = self.claims(&connection.cluster, &pairs)?;
            self.check_names(&states, &claims)?;
            if question == Question::Plan {
                self.check_takeovers(&connection.cluster, &states, &pairs)
                    .await?;
                self.check_namespaces(&connection.cluster, &pairs).await?;
            }
            let declared = self.declared();
            let ownership = Ownership::new(claims, &states.own, &declared, true)
                .with_other_stacks(&states.others);
            let hash_key = connection.store.hash_key().await?;
            let intents: Vec<Intent> = intents_rendered
                .iter()
                .map(|(m, r)| Intent {
                    manifest: m,
                    rendered: r,
                })
                .collect();
            let all: HashSet<String> = if self.options.tags.is_empty() {
                declared.iter().map(|n| (*n).to_owned()).collect()
            } else {
                // With a tag selection, manifests outside it are not "removed".
                states
                    .own
                    .keys()
                    .cloned()
                    .chain(declared.iter().map(|n| (*n).to_owned()))
                    .collect()
            };
            Ok(crate::plan::compare(
                &connection.cluster,
                &FieldManager::of(self.name()),
                &states.own,
                &intents,
                &all,
                &ownership,
                hash_key.as_deref(),
                question,
            )
            .await?)
        };
        tazuna_core::traced(span, work, |_, report| {
            report.as_ref().map(|_| ()).map_err(ToString::to_string)
        })
        .await
    }
}
