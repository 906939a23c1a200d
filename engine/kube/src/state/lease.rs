//! The Lease that serialises runs on one cluster, renewed while held and
//! taken over when its holder is gone, whatever it claims of itself.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};

use super::*;

impl Store {
    /// Take the cluster's lock, waiting up to `timeout` for another holder.
    ///
    /// A Lease is not trusted forever: one whose renew time has passed by its
    /// duration, whose holder was a run on this host that is gone, or that
    /// stayed unchanged for [`LEASE_SECONDS`] while this run watched it (a
    /// renew time in the future proves nothing) is taken over. Waiting is
    /// stretched to that bound, so a planted or abandoned Lease never blocks
    /// a run for good.
    pub async fn lock(&self, holder: &str, timeout: Duration) -> Result<LockGuard, StateError> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NAMESPACE);
        let mut deadline = tokio::time::Instant::now() + timeout;
        let mut watched: Option<Watched> = None;
        loop {
            match self.try_lock(&leases, holder, &mut watched).await? {
                Attempt::Taken { from } => {
                    let renew = tokio::spawn(renew_lease(leases.clone(), holder.to_owned()));
                    return Ok(LockGuard {
                        leases,
                        holder: holder.to_owned(),
                        renew,
                        taken_over: from,
                    });
                }
                Attempt::Held(error) => {
                    if let Some(watched) = &watched {
                        deadline =
                            deadline.max(watched.since + STALE_AFTER + Duration::from_secs(1));
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(error);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }

    /// One try at the lock.
    async fn try_lock(
        &self,
        leases: &Api<Lease>,
        holder: &str,
        watched: &mut Option<Watched>,
    ) -> Result<Attempt, StateError> {
        let now = jiff::Timestamp::now();
        let fresh = Lease {
            metadata: ObjectMeta {
                name: Some(LEASE.into()),
                namespace: Some(NAMESPACE.into()),
                labels: Some([(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.to_owned()),
                lease_duration_seconds: Some(LEASE_SECONDS),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                ..LeaseSpec::default()
            }),
        };
        let raced = || {
            Attempt::Held(StateError::Locked {
                holder: "another run".into(),
                renewed: "just now".into(),
            })
        };
        let Some(current) = leases
            .get_opt(LEASE)
            .await
            .map_err(request("read the lock"))?
        else {
            return match leases.create(&PostParams::default(), &fresh).await {
                Ok(_) => Ok(Attempt::Taken { from: None }),
                Err(e) if is_status(&e, 409) => Ok(raced()),
                Err(e) => Err(request("create the lock")(e)),
            };
        };
        let spec = current.spec.clone().unwrap_or_default();
        let held_by = spec.holder_identity.clone().unwrap_or_default();
        let version = current
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        if watched.as_ref().is_none_or(|w| w.version != version) {
            *watched = Some(Watched {
                version: version.clone(),
                since: tokio::time::Instant::now(),
            });
        }
        let unchanged_for = watched
            .as_ref()
            .map(|w| w.since.elapsed())
            .unwrap_or_default();
        let verdict = lease_verdict(&spec, now, unchanged_for, crashed_here(&held_by));
        if !held_by.is_empty() && held_by != holder && verdict == LeaseVerdict::Live {
            let renewed = spec
                .renew_time
                .as_ref()
                .map(|r| {
                    if r.0 > now {
                        format!(
                            "{} (in the future; taken over if it stays unchanged for {} s)",
                            r.0,
                            STALE_AFTER.as_secs()
                        )
                    } else {
                        r.0.to_string()
                    }
                })
                .unwrap_or_else(|| "never".into());
            return Ok(Attempt::Held(StateError::Locked {
                holder: held_by,
                renewed,
            }));
        }
        let from = (!held_by.is_empty() && held_by != holder)
            .then(|| format!("`{held_by}` ({})", verdict.reason()));
        let mut taken = fresh;
        taken.metadata.resource_version = current.metadata.resource_version.clone();
        match leases.replace(LEASE, &PostParams::default(), &taken).await {
            Ok(_) => Ok(Attempt::Taken { from }),
            Err(e) if is_status(&e, 409) => Ok(raced()),
            Err(e) => Err(request("take the lock")(e)),
        }
    }
}

/// A Lease this run has seen, and since when it has not changed.
#[derive(Debug)]
struct Watched {
    version: String,
    since: tokio::time::Instant,
}

/// What one try at the lock found.
enum Attempt {
    /// The lock is this run's; `from` names the holder it was taken from.
    Taken { from: Option<String> },
    /// Someone else holds it.
    Held(StateError),
}

/// Whether a Lease someone holds may be taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaseVerdict {
    /// Its holder renews it: wait.
    Live,
    /// Its renew time passed by more than its duration.
    Expired,
    /// Its holder was a run on this host that is gone.
    HolderGone,
    /// It did not change while this run watched it for [`STALE_AFTER`]; its
    /// renew time (perhaps in the future) is not believed.
    Stale,
}

impl LeaseVerdict {
    fn reason(self) -> &'static str {
        match self {
            Self::Live => "held",
            Self::Expired => "expired",
            Self::HolderGone => "its process is gone",
            Self::Stale => "not renewed while this run waited",
        }
    }
}

/// Longest lease duration believed; a bigger one is treated as this.
const MAX_LEASE_SECONDS: i64 = 300;

/// How long a Lease may stay unchanged before it is taken over, whatever it
/// says of itself. A live holder renews every 20 s.
const STALE_AFTER: Duration = Duration::from_secs(LEASE_SECONDS as u64);

fn lease_verdict(
    spec: &LeaseSpec,
    now: jiff::Timestamp,
    unchanged_for: Duration,
    holder_gone: bool,
) -> LeaseVerdict {
    if holder_gone {
        return LeaseVerdict::HolderGone;
    }
    let duration =
        i64::from(spec.lease_duration_seconds.unwrap_or(LEASE_SECONDS)).clamp(1, MAX_LEASE_SECONDS);
    match spec.renew_time.as_ref().map(|t| t.0) {
        None => return LeaseVerdict::Expired,
        Some(renewed) if now.as_second() - renewed.as_second() > duration => {
            return LeaseVerdict::Expired;
        }
        _ => {}
    }
    if unchanged_for >= STALE_AFTER {
        return LeaseVerdict::Stale;
    }
    LeaseVerdict::Live
}

const LEASE_SECONDS: i32 = 60;

/// Who takes the lock: `user@host pid N (time)`, so that another run can say
/// who holds it, and a run on the same host can tell that its holder died.
pub fn holder_identity() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "someone".into());
    format!(
        "{user}@{} pid {} ({})",
        host_name(),
        std::process::id(),
        jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .unwrap_or(jiff::Timestamp::now())
    )
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Whether `holder` was a run on this host whose process is gone (it crashed
/// or was killed): its lock need not wait out the lease.
fn crashed_here(holder: &str) -> bool {
    let Some((_, rest)) = holder.split_once('@') else {
        return false;
    };
    let Some((host, rest)) = rest.split_once(" pid ") else {
        return false;
    };
    let Some(pid) = rest
        .split_whitespace()
        .next()
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return false;
    };
    let proc = std::path::Path::new("/proc");
    host == host_name() && proc.is_dir() && !proc.join(pid.to_string()).exists()
}

/// The cluster's lock, renewed in the background until released.
#[derive(Debug)]
pub struct LockGuard {
    leases: Api<Lease>,
    holder: String,
    renew: tokio::task::JoinHandle<()>,
    taken_over: Option<String>,
}

impl LockGuard {
    /// The holder this run took the lock from, and why it could.
    pub fn taken_over(&self) -> Option<&str> {
        self.taken_over.as_deref()
    }

    /// Give the lock back.
    pub async fn release(self) {
        self.renew.abort();
        if let Ok(Some(current)) = self.leases.get_opt(LEASE).await {
            let ours = current
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref())
                == Some(self.holder.as_str());
            if ours {
                let params = DeleteParams {
                    preconditions: Some(kube::api::Preconditions {
                        resource_version: current.metadata.resource_version.clone(),
                        uid: None,
                    }),
                    ..DeleteParams::default()
                };
                let _ = self.leases.delete(LEASE, &params).await;
            }
        }
    }
}

async fn renew_lease(leases: Api<Lease>, holder: String) {
    loop {
        tokio::time::sleep(Duration::from_secs(20)).await;
        let patch = serde_json::json!({
            "spec": { "holderIdentity": holder, "renewTime": MicroTime(jiff::Timestamp::now()) }
        });
        if let Err(error) = leases
            .patch(LEASE, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!("cannot renew the lock: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_holder_on_this_host_is_recognised() {
        let alive = holder_identity();
        assert!(!crashed_here(&alive), "this process is alive: {alive}");
        let dead = format!("someone@{} pid 4000000 (2026-11-30T00:00:00Z)", host_name());
        assert!(crashed_here(&dead));
        assert!(!crashed_here(
            "someone@another-host pid 4000000 (2026-11-30T00:00:00Z)"
        ));
        assert!(!crashed_here("another run"));
    }
    #[test]
    fn a_lease_renewed_in_the_future_is_taken_over_once_it_stays_unchanged() {
        let now = jiff::Timestamp::now();
        let planted = LeaseSpec {
            holder_identity: Some("ghost@elsewhere pid 1".into()),
            lease_duration_seconds: Some(60),
            renew_time: Some(MicroTime("2099-01-01T00:00:00Z".parse().unwrap())),
            ..LeaseSpec::default()
        };
        assert_eq!(
            lease_verdict(&planted, now, Duration::ZERO, false),
            LeaseVerdict::Live
        );
        assert_eq!(
            lease_verdict(&planted, now, STALE_AFTER, false),
            LeaseVerdict::Stale
        );
        let huge = LeaseSpec {
            lease_duration_seconds: Some(i32::MAX),
            renew_time: Some(MicroTime(now - jiff::SignedDuration::from_secs(301))),
            ..planted.clone()
        };
        assert_eq!(
            lease_verdict(&huge, now, Duration::ZERO, false),
            LeaseVerdict::Expired,
            "a lease duration beyond 300 s is not believed"
        );
        let renewed = LeaseSpec {
            renew_time: Some(MicroTime(now)),
            ..planted
        };
        assert_eq!(
            lease_verdict(&renewed, now, Duration::ZERO, false),
            LeaseVerdict::Live
        );
        assert_eq!(
            lease_verdict(&renewed, now, Duration::ZERO, true),
            LeaseVerdict::HolderGone
        );
    }
}
