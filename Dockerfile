# The tensor-fusion runtime controller as an image, for the TensorFusionController `image` prop.
# It runs the same bundles the component otherwise ships in ConfigMaps (the node agent: /app/agent.js). Build context: the package
# root after `npm run build` (a source checkout or node_modules/tensor-fusion-iac, which ships this
# file and build/controller/), e.g.
#   docker build -t registry.example.com/tensor-fusion-controller:$(node -p "require('./package.json').version") .
# The same Node.js line as the component's default nodeImage (a test keeps them equal); pin by digest
# (node:24-alpine@sha256:...) for reproducible builds.
FROM node:24-alpine

WORKDIR /app
# Copied files belong to root, so the runtime user cannot rewrite its own code.
COPY build/controller/controller.js /app/controller.js
COPY build/controller/agent.js /app/agent.js

ENV NODE_ENV=production
# Numeric uid of the image's `node` user, so that Kubernetes can verify runAsNonRoot.
USER 1000:1000
# 8080: /metrics, /healthz, /readyz; 9443: the admission webhook (HTTPS).
EXPOSE 8080 9443
ENTRYPOINT ["node", "/app/controller.js"]
