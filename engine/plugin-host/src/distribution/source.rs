//! `oci://` and `file://` plugin sources as the user wrote them.

use oci_client::Reference;
use oci_client::client::ClientProtocol;

use super::metered::Registry;

use super::*;

/// An `oci://` source taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `host[:port]`.
    pub registry: String,
    /// `path/to/repo`.
    pub repository: String,
    /// The tag, if the source names one.
    pub tag: Option<String>,
    /// The manifest digest, if the source names one.
    pub digest: Option<String>,
}

impl Source {
    /// `registry/repository`: where a component came from, for the cache.
    pub fn origin(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// Parses `reference`, the part after `oci://`. `name` is for errors.
    pub fn parse(name: &str, reference: &str) -> Result<Self, DistributionError> {
        let invalid = |message: String| DistributionError::InvalidReference {
            name: name.to_owned(),
            reference: reference.to_owned(),
            message,
        };
        let parsed: Reference = reference
            .parse()
            .map_err(|e: oci_client::ParseError| invalid(e.to_string()))?;
        let (named, digest) = match reference.split_once('@') {
            Some((named, digest)) => (named, Some(digest.to_owned())),
            None => (reference, None),
        };
        let last = named.rsplit('/').next().unwrap_or(named);
        let tag = last.split_once(':').map(|(_, tag)| tag.to_owned());
        // As docker reads it: the first segment is a host if it has a `.` or
        // a `:`, or is `localhost`.
        let first = named.split('/').next().unwrap_or_default();
        let names_host =
            named.contains('/') && (first.contains(['.', ':']) || first == "localhost");
        if !names_host {
            return Err(invalid(
                "it names no registry host (Tazuna does not assume docker.io)".to_owned(),
            ));
        }
        Ok(Self {
            registry: parsed.registry().to_owned(),
            repository: parsed.repository().to_owned(),
            tag,
            digest,
        })
    }

    /// `oci://host/repo`, without tag or digest: what a pin records.
    pub fn repository_url(&self) -> String {
        format!("oci://{}/{}", self.registry, self.repository)
    }

    pub(super) fn with_tag(&self, tag: &str) -> Reference {
        Reference::with_tag(
            self.registry.clone(),
            self.repository.clone(),
            tag.to_owned(),
        )
    }

    pub(super) fn with_digest(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.registry.clone(),
            self.repository.clone(),
            digest.to_owned(),
        )
    }

    /// The source as a reference: by digest, else by tag, else `latest`.
    pub fn reference(&self) -> Reference {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => self.with_digest(digest),
            (None, Some(tag)) => self.with_tag(tag),
            (None, None) => self.with_tag("latest"),
        }
    }

    /// A client for this registry: plain HTTP on loopback, HTTPS elsewhere.
    pub fn client(&self) -> Registry {
        self.client_over(false)
    }

    /// A client for this registry, over plain HTTP if `plain_http` or the
    /// registry is on a loopback address.
    pub fn client_over(&self, plain_http: bool) -> Registry {
        let host = self
            .registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(host, _)| host);
        let loopback =
            matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1") || host.starts_with("127.");
        let protocol = if loopback || plain_http {
            ClientProtocol::HttpsExcept(vec![self.registry.clone()])
        } else {
            ClientProtocol::Https
        };
        Registry::new(protocol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_keep_what_the_user_wrote() {
        let source = Source::parse("p", "127.0.0.1:5000/plugins/configmap").unwrap();
        assert_eq!(source.registry, "127.0.0.1:5000");
        assert_eq!(source.repository, "plugins/configmap");
        assert_eq!(source.tag, None, "no implicit `latest`");
        assert_eq!(
            source.repository_url(),
            "oci://127.0.0.1:5000/plugins/configmap"
        );
        let digest = format!("sha256:{}", "ab".repeat(32));
        let pinned = Source::parse("p", &format!("ghcr.io/acme/x:1.2.3@{digest}")).unwrap();
        assert_eq!(pinned.tag.as_deref(), Some("1.2.3"));
        assert_eq!(pinned.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(
            pinned.reference().to_string(),
            format!("ghcr.io/acme/x@{digest}")
        );
        for hostless in ["configmap", "acme/configmap"] {
            let error = Source::parse("p", hostless).unwrap_err().to_string();
            assert!(error.contains("names no registry host"), "{error}");
        }
        assert!(Source::parse("p", "localhost/acme/configmap").is_ok());
    }
}
