//! A backup of the whole state ([`Client::backup`]), as the bytes of a
//! backup file: `leasehold snapshot save` writes them to disk.

use crate::error::Error;
use crate::wire::BackupInfo;
use crate::Client;
use leasehold_proto::v1::cluster_client::ClusterClient;
use leasehold_proto::v1::{BackupChunk, BackupRequest};
use std::time::Duration;
use tonic::Streaming;

/// A backup being received: what it covers, then its bytes in order.
#[derive(Debug)]
pub struct BackupDownload {
    /// What the backup covers (from its first chunk).
    pub info: BackupInfo,
    first: Option<Vec<u8>>,
    rest: Streaming<BackupChunk>,
}

impl BackupDownload {
    /// The next bytes of the file; `Ok(None)` after the last. An error ends
    /// the download (the file is incomplete: save again).
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, Error> {
        if let Some(first) = self.first.take() {
            return Ok(Some(first));
        }
        let chunk = self.rest.message().await;
        let chunk = chunk.map_err(|status| Error::from_status(&status).0)?;
        Ok(chunk.map(|chunk| chunk.data))
    }
}

impl Client {
    /// Asks the leader for a consistent copy of the whole state (an admin
    /// call). The copy is made when the call is answered; its bytes then
    /// stream from that node.
    pub async fn backup(&self) -> Result<BackupDownload, Error> {
        let mut rest = self
            .call("Backup", Duration::ZERO, |channel| async move {
                ClusterClient::new(channel).backup(BackupRequest {}).await
            })
            .await?;
        let first = rest.message().await;
        let first = first.map_err(|status| Error::from_status(&status).0)?;
        let Some(BackupChunk {
            data,
            info: Some(info),
        }) = first
        else {
            return Err(Error::Unavailable {
                message: "the server ended the backup before its header; save again".into(),
            });
        };
        Ok(BackupDownload {
            info,
            first: Some(data),
            rest,
        })
    }
}
