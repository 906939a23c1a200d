//! The certificates and keys of one harness cluster, made fresh for every cluster with
//! rcgen (ECDSA P-256): a CA, one serving certificate for kube-apiserver, the
//! controller-manager and the scheduler (IP SAN 127.0.0.1), one admin client
//! certificate in `system:masters` that the components and kubectl share, and the
//! service-account signing key.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber,
};

/// The files written by [`generate`], all PEM.
#[derive(Clone, Debug)]
pub(crate) struct PkiFiles {
    pub ca_cert: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
}

impl PkiFiles {
    /// The files [`generate`] writes into `dir`.
    pub(crate) fn at(dir: &Path) -> PkiFiles {
        PkiFiles {
            ca_cert: dir.join("ca.crt"),
            serving_cert: dir.join("serving.crt"),
            serving_key: dir.join("serving.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
        }
    }
}

/// Writes a new CA, serving and admin certificates and a service-account key into `dir`.
pub(crate) fn generate(dir: &Path) -> anyhow::Result<PkiFiles> {
    fs::create_dir_all(dir).with_context(|| format!("creating `{}`", dir.display()))?;

    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name = name("tazuna-tests-ca", None);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.serial_number = Some(SerialNumber::from_slice(&[1]));
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, &ca_key);

    let serving_key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(
        [
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "127.0.0.1",
            "::1",
        ]
        .map(String::from)
        .to_vec(),
    )?;
    serving.distinguished_name = name("kube-apiserver", None);
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.serial_number = Some(SerialNumber::from_slice(&[2]));
    serving.use_authority_key_identifier_extension = true;
    let serving_cert = serving.signed_by(&serving_key, &issuer)?;

    let admin_key = KeyPair::generate()?;
    let mut admin = CertificateParams::new(Vec::<String>::new())?;
    admin.distinguished_name = name("tazuna-admin", Some("system:masters"));
    admin.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    admin.serial_number = Some(SerialNumber::from_slice(&[3]));
    admin.use_authority_key_identifier_extension = true;
    let admin_cert = admin.signed_by(&admin_key, &issuer)?;

    let sa_key = KeyPair::generate()?;

    let files = PkiFiles::at(dir);
    write(&files.ca_cert, &ca_cert.pem())?;
    write(&files.serving_cert, &serving_cert.pem())?;
    write(&files.serving_key, &serving_key.serialize_pem())?;
    write(&files.admin_cert, &admin_cert.pem())?;
    write(&files.admin_key, &admin_key.serialize_pem())?;
    write(&files.sa_key, &sa_key.serialize_pem())?;
    write(&files.sa_pub, &sa_key.public_key_pem())?;
    Ok(files)
}

fn name(common_name: &str, organization: Option<&str>) -> rcgen::DistinguishedName {
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}

fn write(path: &Path, pem: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    // Keys and credentials: readable by their owner only.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("writing `{}`", path.display()))?;
    file.write_all(pem.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_file_as_pem() {
        let dir = tempfile::tempdir().unwrap();
        let files = generate(dir.path()).unwrap();
        for path in [&files.ca_cert, &files.serving_cert, &files.admin_cert] {
            let text = fs::read_to_string(path).unwrap();
            assert!(
                text.starts_with("-----BEGIN CERTIFICATE-----"),
                "{}",
                path.display()
            );
        }
        for path in [&files.serving_key, &files.admin_key, &files.sa_key] {
            let text = fs::read_to_string(path).unwrap();
            assert!(
                text.starts_with("-----BEGIN PRIVATE KEY-----"),
                "{}",
                path.display()
            );
        }
        let public = fs::read_to_string(&files.sa_pub).unwrap();
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
    }
}
