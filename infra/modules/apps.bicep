// The Container Apps environment (logs to Log Analytics) and Baton's two apps from one image:
// `web` (ingress, `baton serve --no-worker`, Entra sign-in) and `worker` (no ingress,
// `baton worker`). Both run as the user-assigned identity.
//
// Every setting `baton.settings.Settings` reads is set below (sharedEnv, channelEnv, webEnv,
// workerEnv) or listed here as not set, with why. tests/unit/test_infra.py reads both.
// not set: BATON_HOST: the web container's command line gives --host 0.0.0.0, which wins; the worker serves no HTTP
// not set: BATON_PORT: the web container's command line gives --port 8000 (the ingress target port), which wins
// not set: BATON_FAILPOINTS: tests only; it makes the process exit on purpose at named points
// not set: AZURE_OPENAI_API_KEY: keyless; the identity has Cognitive Services OpenAI User on the account (AZURE_CLIENT_ID)
// not set: OPENAI_API_KEY: for BATON_MODEL=openai; this deployment calls Azure OpenAI
// not set: OPENAI_BASE_URL: for BATON_MODEL=openai or ollama; this deployment calls Azure OpenAI
// not set: OTEL_EXPORTER_OTLP_ENDPOINT: Application Insights is the exporter here (with its connection string set, OTLP is not used)
// not set: BATON_BENCH_POSTGRES_URL: read by `baton bench` only, never by a serving process
// not set: OPENAI_MODEL: for BATON_MODEL=openai; this deployment calls Azure OpenAI
// not set: BATON_OLLAMA_BASE_URL: for BATON_MODEL=ollama; this deployment calls Azure OpenAI
// not set: BATON_OLLAMA_MODEL: for BATON_MODEL=ollama; this deployment calls Azure OpenAI
// not set: BATON_CLOCK_FILE: tests only; it moves Baton's clock by an offset read from a file
// not set: BATON_SLACK_API_URL: Slack's own Web API, the default; tests point it at a stand-in
// not set: BATON_TEAMS_OPENID_METADATA_URL: the Bot Connector's own metadata, the default; tests point it at a stand-in
// not set: BATON_TOKEN: read by `baton mcp` (MCP over stdio, on an agent's machine) only, never by a serving process
param location string
param tags object
param environmentName string
param webName string
param workerName string
param webExists bool
param workerExists bool
param workspaceName string
param appInsightsName string
param identityId string
param identityClientId string
param registryServer string
@description('Versionless Key Vault secret URIs by name (vault.bicep); empty: not given.')
param secretUris object
param model string
param openAiEndpoint string
param openAiDeploymentName string
param openAiApiVersion string
param policies string
param authClientId string
param authUnauthenticatedAction string
param easyAuthGroups string
param easyAuthAdminGroup string
param webhookUrl string
@description('BATON_TEAMS_APP_ID: the Azure Bot\'s Microsoft app id. Empty: no Teams bot.')
param teamsAppId string
@description('BATON_TEAMS_TENANT_ID; empty: this deployment\'s tenant.')
param teamsTenantId string
param smtpFrom string
param claimSeconds int
param maxBodyBytes int
param workflows string
param workerConcurrency int
param workerPollMs int
param jobLeaseSeconds int
param logLevel string
param webMinReplicas int
param webMaxReplicas int
param workerReplicas int

// Until `azd deploy` pushes Baton's image, a new app runs a public placeholder, which need not
// start with Baton's arguments (harmless: azd deploy replaces containers[0].image minutes later,
// and keeps everything else set here).
var placeholderImage = 'mcr.microsoft.com/azuredocs/containerapps-helloworld:latest'
var port = 8000
var easyAuth = !empty(authClientId)
var authSecretName = 'microsoft-provider-authentication-secret'

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: workspaceName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource containerEnv 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: environmentName
  location: location
  tags: tags
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: workspace.properties.customerId
        sharedKey: workspace.listKeys().primarySharedKey
      }
    }
  }
}

module webImage 'fetch-image.bicep' = {
  name: 'web-image'
  params: {
    exists: webExists
    name: webName
  }
}

module workerImage 'fetch-image.bicep' = {
  name: 'worker-image'
  params: {
    exists: workerExists
    name: workerName
  }
}

// Container Apps secrets: Key Vault references resolved as the identity, plus the Application
// Insights connection string.
var sharedSecrets = concat(
  [
    {
      name: 'database-url'
      keyVaultUrl: secretUris.databaseUrl
      identity: identityId
    }
    {
      name: 'secret-key'
      keyVaultUrl: secretUris.secretKey
      identity: identityId
    }
    {
      name: 'appinsights-connection-string'
      value: appInsights.properties.ConnectionString
    }
  ],
  empty(secretUris.slackWebhookUrl) ? [] : [
    {
      name: 'slack-webhook-url'
      keyVaultUrl: secretUris.slackWebhookUrl
      identity: identityId
    }
  ],
  empty(secretUris.slackSigningSecret) ? [] : [
    {
      name: 'slack-signing-secret'
      keyVaultUrl: secretUris.slackSigningSecret
      identity: identityId
    }
  ],
  empty(secretUris.slackBotToken) ? [] : [
    {
      name: 'slack-bot-token'
      keyVaultUrl: secretUris.slackBotToken
      identity: identityId
    }
  ],
  empty(secretUris.teamsWebhookUrl) ? [] : [
    {
      name: 'teams-webhook-url'
      keyVaultUrl: secretUris.teamsWebhookUrl
      identity: identityId
    }
  ],
  empty(secretUris.teamsAppPassword) ? [] : [
    {
      name: 'teams-app-password'
      keyVaultUrl: secretUris.teamsAppPassword
      identity: identityId
    }
  ],
  empty(secretUris.smtpUrl) ? [] : [
    {
      name: 'smtp-url'
      keyVaultUrl: secretUris.smtpUrl
      identity: identityId
    }
  ],
  empty(secretUris.webhookSecret) ? [] : [
    {
      name: 'webhook-secret'
      keyVaultUrl: secretUris.webhookSecret
      identity: identityId
    }
  ]
)

var webSecrets = concat(
  sharedSecrets,
  easyAuth && !empty(secretUris.authClientSecret) ? [
    {
      name: authSecretName
      keyVaultUrl: secretUris.authClientSecret
      identity: identityId
    }
  ] : []
)

// Settings both apps read.
var sharedEnv = [
  {
    name: 'BATON_DATABASE_URL'
    secretRef: 'database-url'
  }
  {
    name: 'BATON_SECRET_KEY'
    secretRef: 'secret-key'
  }
  {
    name: 'BATON_BASE_URL'
    value: 'https://${webName}.${containerEnv.properties.defaultDomain}'
  }
  {
    name: 'BATON_MODEL'
    value: model
  }
  {
    name: 'AZURE_OPENAI_ENDPOINT'
    value: openAiEndpoint
  }
  {
    name: 'AZURE_OPENAI_DEPLOYMENT'
    value: openAiDeploymentName
  }
  {
    // Empty: MAF's default API version.
    name: 'AZURE_OPENAI_API_VERSION'
    value: openAiApiVersion
  }
  {
    // DefaultAzureCredential picks the user-assigned identity by its client id.
    name: 'AZURE_CLIENT_ID'
    value: identityClientId
  }
  {
    name: 'APPLICATIONINSIGHTS_CONNECTION_STRING'
    secretRef: 'appinsights-connection-string'
  }
  {
    name: 'BATON_WORKFLOWS'
    value: workflows
  }
  {
    // A policies file in the image; empty: the rules shipped with Baton.
    name: 'BATON_POLICIES'
    value: policies
  }
  {
    name: 'BATON_WORKER_CONCURRENCY'
    value: string(workerConcurrency)
  }
  {
    name: 'BATON_WORKER_POLL_MS'
    value: string(workerPollMs)
  }
  {
    name: 'BATON_JOB_LEASE_SECONDS'
    value: string(jobLeaseSeconds)
  }
  {
    // A stopped revision's drives reach their next commit first: within Container Apps' 30 s
    // termination grace period, which then kills the container.
    name: 'BATON_SHUTDOWN_GRACE_SECONDS'
    value: '20'
  }
  {
    name: 'BATON_LOG_LEVEL'
    value: logLevel
  }
  {
    name: 'BATON_CLAIM_SECONDS'
    value: string(claimSeconds)
  }
  {
    name: 'BATON_MAX_BODY_BYTES'
    value: string(maxBodyBytes)
  }
  {
    // Notification delivery: attempts, first retry delay (doubling), deadline of a whole attempt.
    name: 'BATON_NOTIFY_MAX_ATTEMPTS'
    value: '6'
  }
  {
    name: 'BATON_NOTIFY_BACKOFF_SECONDS'
    value: '5'
  }
  {
    name: 'BATON_NOTIFY_TIMEOUT_SECONDS'
    value: '10'
  }
  {
    // Deliveries at once per process, in slots apart from drives and timers.
    name: 'BATON_NOTIFY_CONCURRENCY'
    value: '4'
  }
  {
    name: 'BATON_SMTP_FROM'
    value: smtpFrom
  }
]

// Notification channels, each only when given (empty: that channel is off).
var channelEnv = concat(
  empty(secretUris.slackWebhookUrl) ? [] : [
    {
      name: 'BATON_SLACK_WEBHOOK_URL'
      secretRef: 'slack-webhook-url'
    }
  ],
  empty(secretUris.slackSigningSecret) ? [] : [
    {
      name: 'BATON_SLACK_SIGNING_SECRET'
      secretRef: 'slack-signing-secret'
    }
  ],
  empty(secretUris.slackBotToken) ? [] : [
    {
      name: 'BATON_SLACK_BOT_TOKEN'
      secretRef: 'slack-bot-token'
    }
  ],
  empty(secretUris.teamsWebhookUrl) ? [] : [
    {
      name: 'BATON_TEAMS_WEBHOOK_URL'
      secretRef: 'teams-webhook-url'
    }
  ],
  empty(teamsAppId) ? [] : [
    {
      // The bot: its app id (the Bot Connector's JWT audience) and its registration's tenant;
      // with no password below, its tokens come from the managed identity of that client id.
      name: 'BATON_TEAMS_APP_ID'
      value: teamsAppId
    }
  ],
  [
    {
      name: 'BATON_TEAMS_TENANT_ID'
      value: empty(teamsTenantId) ? tenant().tenantId : teamsTenantId
    }
  ],
  empty(secretUris.teamsAppPassword) ? [] : [
    {
      name: 'BATON_TEAMS_APP_PASSWORD'
      secretRef: 'teams-app-password'
    }
  ],
  empty(secretUris.smtpUrl) ? [] : [
    {
      name: 'BATON_SMTP_URL'
      secretRef: 'smtp-url'
    }
  ],
  empty(webhookUrl) ? [] : [
    {
      name: 'BATON_WEBHOOK_URL'
      value: webhookUrl
    }
  ],
  empty(secretUris.webhookSecret) ? [] : [
    {
      name: 'BATON_WEBHOOK_SECRET'
      secretRef: 'webhook-secret'
    }
  ]
)

// The web app only: who is calling. easyauth only behind Container Apps authentication.
var webEnv = concat(sharedEnv, channelEnv, [
  {
    name: 'BATON_AUTH'
    value: easyAuth ? 'easyauth' : 'local'
  }
  {
    // A JSON object; empty is not one.
    name: 'BATON_EASYAUTH_GROUPS'
    value: empty(easyAuthGroups) ? '{}' : easyAuthGroups
  }
  {
    name: 'BATON_EASYAUTH_ADMIN_GROUP'
    value: easyAuthAdminGroup
  }
  {
    // The inbox's sessions end this many seconds after sign-in (Baton's own sign-in; behind
    // Entra the platform's session decides).
    name: 'BATON_SESSION_MAX_AGE_S'
    value: '28800'
  }
  {
    // ...and this many seconds after their last use.
    name: 'BATON_SESSION_IDLE_S'
    value: '3600'
  }
  {
    // Failed sign-ins in a row that lock a name, and for how long (seconds).
    name: 'BATON_SIGNIN_MAX_FAILURES'
    value: '5'
  }
  {
    name: 'BATON_SIGNIN_LOCKOUT_SECONDS'
    value: '300'
  }
  {
    // The longest an MCP call (/mcp) may wait for a person's answer, in seconds. The ingress
    // holds a streamed answer open this long; the MCP client's own read timeout must allow it.
    name: 'BATON_MCP_MAX_WAIT_SECONDS'
    value: '900'
  }
  {
    name: 'OTEL_SERVICE_NAME'
    value: 'baton-web'
  }
])

var workerEnv = concat(sharedEnv, channelEnv, [
  {
    name: 'OTEL_SERVICE_NAME'
    value: 'baton-worker'
  }
])

resource web 'Microsoft.App/containerApps@2024-03-01' = {
  name: webName
  location: location
  tags: union(tags, { 'azd-service-name': 'web' })
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    managedEnvironmentId: containerEnv.id
    configuration: {
      activeRevisionsMode: 'Single'
      ingress: {
        external: true
        targetPort: port
        transport: 'auto'
        allowInsecure: false
      }
      registries: [
        {
          server: registryServer
          identity: identityId
        }
      ]
      secrets: webSecrets
    }
    template: {
      containers: [
        {
          name: 'web'
          image: empty(webImage.outputs.image) ? placeholderImage : webImage.outputs.image
          args: ['serve', '--host', '0.0.0.0', '--port', string(port), '--no-worker']
          env: webEnv
          resources: {
            cpu: json('0.5')
            memory: '1Gi'
          }
          probes: [
            {
              // Up to 105 s to import MAF and open the store (Container Apps allows at most 10
              // failures of a probe).
              type: 'Startup'
              httpGet: {
                path: '/healthz'
                port: port
              }
              initialDelaySeconds: 5
              periodSeconds: 10
              failureThreshold: 10
            }
            {
              type: 'Readiness'
              httpGet: {
                path: '/healthz'
                port: port
              }
              periodSeconds: 10
              failureThreshold: 3
            }
            {
              type: 'Liveness'
              httpGet: {
                path: '/healthz'
                port: port
              }
              periodSeconds: 30
              failureThreshold: 5
            }
          ]
        }
      ]
      scale: {
        minReplicas: webMinReplicas
        maxReplicas: webMaxReplicas
        rules: [
          {
            name: 'http'
            http: {
              metadata: {
                concurrentRequests: '50'
              }
            }
          }
        ]
      }
    }
  }
}

// Microsoft Entra ID sign-in in front of the web app; Baton reads the signed-in person from the
// X-MS-CLIENT-PRINCIPAL headers the platform sets (and strips from outside requests).
resource webAuth 'Microsoft.App/containerApps/authConfigs@2024-03-01' = if (easyAuth) {
  parent: web
  name: 'current'
  properties: {
    platform: {
      enabled: true
    }
    globalValidation: {
      unauthenticatedClientAction: authUnauthenticatedAction
      redirectToProvider: 'azureactivedirectory'
      // Slack's callbacks and the Teams bot's activities prove themselves (a signature, the Bot
      // Connector's JWT) and never carry a sign-in: the platform must let them through.
      excludedPaths: [
        '/healthz'
        '/integrations/slack/actions'
        '/integrations/teams/messages'
      ]
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: authClientId
          clientSecretSettingName: empty(secretUris.authClientSecret) ? null : authSecretName
          openIdIssuer: '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'
        }
        validation: {
          allowedAudiences: [
            authClientId
            'api://${authClientId}'
          ]
        }
      }
    }
  }
}

resource worker 'Microsoft.App/containerApps@2024-03-01' = {
  name: workerName
  location: location
  tags: union(tags, { 'azd-service-name': 'worker' })
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    managedEnvironmentId: containerEnv.id
    configuration: {
      activeRevisionsMode: 'Single'
      registries: [
        {
          server: registryServer
          identity: identityId
        }
      ]
      secrets: sharedSecrets
    }
    template: {
      containers: [
        {
          name: 'worker'
          image: empty(workerImage.outputs.image) ? placeholderImage : workerImage.outputs.image
          args: ['worker']
          env: workerEnv
          resources: {
            cpu: json('1.0')
            memory: '2Gi'
          }
        }
      ]
      // No ingress and no scale rule: a fixed number of replicas, each leasing jobs.
      scale: {
        minReplicas: workerReplicas
        maxReplicas: workerReplicas
      }
    }
  }
}

output environmentName string = containerEnv.name
output webName string = web.name
output webUri string = 'https://${web.properties.configuration.ingress.fqdn}'
output workerName string = worker.name
