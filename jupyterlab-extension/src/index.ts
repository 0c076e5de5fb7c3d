/**
 * The JupyterLab plugin: registers the `%%qvr` cell extractor with JupyterLab's LSP
 * extractor manager, for notebooks whose host language is Python (IPython's magics).
 * The language server itself is found by jupyter-lsp through the `jupyter_lsp_spec_v1`
 * entry point of the qvr Python package (qvr/jupyter_lsp.py); jupyterlab-lsp gives the
 * cells diagnostics, hover and completion.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ILSPCodeExtractorsManager, ILSPDocumentConnectionManager } from "@jupyterlab/lsp";
import { INotebookTracker } from "@jupyterlab/notebook";

import { QvrCellExtractor } from "./extractor";

const plugin: JupyterFrontEndPlugin<void> = {
  id: "jupyterlab-qvr:cells",
  description: "Sends the %%qvr cells of Python notebooks to the qvr language server.",
  autoStart: true,
  requires: [ILSPCodeExtractorsManager],
  optional: [INotebookTracker, ILSPDocumentConnectionManager],
  activate: (
    _app: JupyterFrontEnd,
    extractors: ILSPCodeExtractorsManager,
    notebooks: INotebookTracker | null,
    connections: ILSPDocumentConnectionManager | null,
  ): void => {
    extractors.register(new QvrCellExtractor(), "python");
    if (notebooks === null || connections === null) return;
    // A notebook's cells are split into per-language documents when its Python document
    // connects to a Python language server, or at the notebook's first edit. qvr needs no
    // Python server; without one the `%%qvr` cells would go unchecked until the user
    // types. So once the notebook's LSP adapter is ready and has no connection of its
    // own, split the cells as a connection would.
    notebooks.widgetAdded.connect((_tracker, panel) => {
      void panel.context.ready.then(async () => {
        const adapter = connections.adapters.get(panel.context.path);
        if (adapter === undefined) return; // language services are off (or another client)
        await adapter.ready;
        if (!adapter.isConnected && !adapter.isDisposed) await adapter.updateDocuments();
      });
    });
  },
};

export default plugin;
