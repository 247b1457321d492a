//! Membership changes of a running [`Cluster`]: a node added, removed,
//! or brought back wiped (as an operator replaces a removed member).

use super::{Cluster, Formation, Node, NODES_MAX};

impl Cluster {
    /// Starts a new node with `--join` and adds it as a voter through the
    /// cluster; returns its id.
    pub async fn add_node(&mut self) -> Result<u64, String> {
        let id = self.nodes.keys().max().map_or(1, |max| max + 1);
        if id > NODES_MAX {
            return Err(format!("no more than {NODES_MAX} nodes"));
        }
        let node = Node::new(&self.spec.dir, id, Formation::Join).await?;
        self.nodes.insert(id, node);
        self.join(id).await?;
        Ok(id)
    }

    /// Starts node `id` (set to join) and adds it through the cluster.
    async fn join(&mut self, id: u64) -> Result<(), String> {
        let addr = self.proxy(id)?.addr().to_string();
        self.spawn(id)?;
        self.await_answering(id).await?;
        let client = self.client().await?;
        client
            .add_member(id, &addr)
            .await
            .map_err(|e| format!("add node {id} at {addr}: {e}"))?;
        Ok(())
    }

    /// Brings back node `id` after it was removed: kills it, wipes its
    /// data dir, starts it with `--join` at its old address and adds it
    /// again (as an operator replaces a removed member).
    pub async fn rejoin_wiped(&mut self, id: u64) -> Result<(), String> {
        self.kill9(id)?;
        let node = self.node_mut(id)?;
        let _ = std::fs::remove_dir_all(&node.data_dir);
        node.formation = Formation::Join;
        self.join(id).await
    }

    /// Removes node `id` from the membership (its process runs on, removed).
    pub async fn remove_node(&self, id: u64) -> Result<(), String> {
        let client = self.client().await?;
        client
            .remove_member(id)
            .await
            .map_err(|e| format!("remove node {id}: {e}"))?;
        Ok(())
    }
}
