//! Tell the host what a render's output depends on (the WIT `render-traits` import, contract
//! 0.1.1), so that the engine needs to know nothing of the plugin's config:
//!
//! - `reads_cluster`: the output depends on [`RenderRequest::cluster`](crate::RenderRequest)
//!   (helm's `.Capabilities`). The engine renders again, before anything is applied, once an
//!   earlier layer of the same run brings CRDs the cluster does not serve yet.
//! - `deterministic`: two renders of the same request agree. When not, the engine renders a
//!   second time, marks the fields that came out otherwise as generated and keeps their live
//!   values on the cluster (as a chart's `lookup` guard would under `helm upgrade`).
//!
//! A render that declares nothing is taken to read the cluster and to be deterministic. A
//! plugin that renders Go templates can find out with [`templates::may_draw_anew`]:
//!
//! ```
//! use tazuna_sdk::traits::{self, RenderTraits};
//!
//! # let chart = std::path::Path::new("/manifest/charts/app");
//! traits::declare(RenderTraits {
//!     reads_cluster: true,
//!     deterministic: !traits::templates::may_draw_anew(chart, &[]),
//! });
//! ```

pub use crate::bindings::source::tazuna::plugin::render_traits::Traits as RenderTraits;
/// Scanning Go templates for the functions they call, as the engine does.
pub use tazuna_gotmpl as templates;

/// Declares what this render depends on; the last call of a render counts. Outside a Tazuna
/// host (unit tests on the host target) the declaration is kept for [`declared`].
pub fn declare(traits: RenderTraits) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::source::tazuna::plugin::render_traits::declare(traits);
    #[cfg(not(target_arch = "wasm32"))]
    DECLARED.with(|declared| declared.set(Some(traits)));
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static DECLARED: std::cell::Cell<Option<RenderTraits>> = const { std::cell::Cell::new(None) };
}

/// What this thread's renders last declared, taken (host target only, for a plugin's unit tests).
#[cfg(not(target_arch = "wasm32"))]
pub fn declared() -> Option<RenderTraits> {
    DECLARED.with(std::cell::Cell::take)
}
