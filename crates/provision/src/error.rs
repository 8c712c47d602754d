//! The provisioner's error for everything that is not a step's outcome (steps report a
//! [`crate::StepFailure`] with what to do): mirroring the resource, the watch, cluster clients.

/// Why a mirror, watch or client call failed. The text is for operators' logs and the
/// resource's status; it names the call and never carries credentials.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A call to the Kubernetes API server failed.
    #[error("{message}")]
    Cluster {
        /// Which call and what the server said (see [`crate::kubernetes::failure`]).
        message: String,
        /// The client's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The fleet database failed.
    #[error("the fleet database: {0}")]
    Database(#[from] opencrane_db::Error),
    /// No usable cluster configuration (URL, kubeconfig or in-cluster service account).
    #[error("the cluster configuration: {0}")]
    Config(String),
    /// The fleet's service layer refused a ClusterTenant resource; the sentence names the field.
    #[error("{0}")]
    Refused(String),
}

impl Error {
    /// A failed API call: `what` says which (“applying the ClusterTenant resource”).
    pub fn cluster(what: &str, source: kube::Error) -> Self {
        Self::Cluster { message: crate::kubernetes::failure(what, &source).message, source: Box::new(source) }
    }
}
