// Merged into @jupyterlab/builder's configuration (package.json's jupyterlab.webpackConfig).
// Webpack's default "deterministic" module ids hash each module's identifier, and the
// federation container's identifier holds the absolute path of the modules it exposes,
// so a checkout in another folder built other ids and other file hashes. Ids by order of
// use are the same wherever the sources lie, so `npm test` can check that the committed
// qvr/labextension is what the sources build.
module.exports = {
  optimization: { moduleIds: "natural", chunkIds: "natural" },
};
