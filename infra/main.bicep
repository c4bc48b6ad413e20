// Baton on Azure Container Apps: `azd up` provisions this, then deploys the image twice (web and
// worker, azure.yaml). Parameters: infra/README.md. Resources, in a new resource group:
//   Log Analytics + Application Insights          modules/monitoring.bicep
//   a user-assigned managed identity              modules/identity.bicep
//   Azure Container Registry (AcrPull)            modules/registry.bicep
//   PostgreSQL Flexible Server + database         modules/postgres.bicep
//   Key Vault with the secrets (Secrets User)     modules/vault.bicep
//   Azure OpenAI: created, or an existing account (Cognitive Services OpenAI User)  modules/openai.bicep
//   Container Apps environment, `web` and `worker` apps, Entra sign-in  modules/apps.bicep
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment; names the resource group and seeds resource names.')
param environmentName string

@minLength(1)
@description('Azure region of every resource (Azure OpenAI: see openAiLocation).')
param location string

@description('Object id of the person (or service principal) running azd: gets Key Vault Secrets Officer. Empty: nobody.')
param principalId string = ''

@allowed(['User', 'ServicePrincipal', 'Group'])
@description('What principalId is.')
param principalType string = 'User'

@description('Whether the web container app exists already (azd sets SERVICE_WEB_RESOURCE_EXISTS); keeps its deployed image.')
param webExists bool = false

@description('Whether the worker container app exists already (azd sets SERVICE_WORKER_RESOURCE_EXISTS).')
param workerExists bool = false

// --- the model -------------------------------------------------------------------------------

@allowed(['scripted', 'azure-openai', 'openai', 'ollama'])
@description('BATON_MODEL: the model behind the agents.')
param model string = 'azure-openai'

@description('Name of an existing Azure OpenAI account to use. Empty: a new account is created.')
param openAiAccountName string = ''

@description('Resource group of the existing Azure OpenAI account (required with openAiAccountName).')
param openAiResourceGroupName string = ''

@description('Region of a created Azure OpenAI account (model availability differs by region). Empty: location.')
param openAiLocation string = ''

@description('AZURE_OPENAI_DEPLOYMENT: the model deployment the agents call (created with a new account).')
param openAiDeploymentName string = 'gpt-4o-mini'

@description('AZURE_OPENAI_API_VERSION: the Azure OpenAI API version. Empty: MAF\'s default.')
param openAiApiVersion string = ''

@description('Model of a created deployment.')
param openAiModelName string = 'gpt-4o-mini'

@description('Model version of a created deployment.')
param openAiModelVersion string = '2024-07-18'

@description('Capacity of a created deployment, in thousands of tokens per minute.')
param openAiCapacity int = 10

// --- PostgreSQL ------------------------------------------------------------------------------

@description('Administrator login of the PostgreSQL server (Baton connects as it).')
param postgresAdminLogin string = 'batonadmin'

@secure()
@minLength(16)
@description('Administrator password of the PostgreSQL server; azd generates one on the first run.')
@metadata({
  azd: {
    type: 'generate'
    config: {
      length: 32
    }
  }
})
param postgresAdminPassword string

@description('The database Baton uses.')
param postgresDatabaseName string = 'baton'

@description('Compute size of the server (Burstable Standard_B2s allows 429 connections; B1ms only 50).')
param postgresSkuName string = 'Standard_B2s'

@allowed(['Burstable', 'GeneralPurpose', 'MemoryOptimized'])
@description('Tier of postgresSkuName.')
param postgresSkuTier string = 'Burstable'

@minValue(32)
@description('Storage of the server, in GB (it grows by itself).')
param postgresStorageGb int = 32

@description('PostgreSQL major version.')
param postgresVersion string = '16'

// --- Baton's settings ------------------------------------------------------------------------

@secure()
@minLength(32)
@description('BATON_SECRET_KEY: signs sessions and links; azd generates one on the first run.')
@metadata({
  azd: {
    type: 'generate'
    config: {
      length: 64
    }
  }
})
param secretKey string

@description('Client (application) id of the Entra app registration for sign-in. Empty: no Container Apps authentication, BATON_AUTH=local.')
param authClientId string = ''

@secure()
@description('Client secret of that app registration (kept in Key Vault).')
param authClientSecret string = ''

@allowed(['AllowAnonymous', 'RedirectToLoginPage', 'Return401'])
@description('What Container Apps authentication does with a request that has not signed in. AllowAnonymous lets Baton decide (bearer tokens keep working).')
param authUnauthenticatedAction string = 'AllowAnonymous'

@description('BATON_EASYAUTH_GROUPS: Entra group object id -> Baton team, a JSON object as a string.')
param easyAuthGroups string = '{}'

@description('BATON_EASYAUTH_ADMIN_GROUP: Entra group object id whose members are Baton admins.')
param easyAuthAdminGroup string = ''

@secure()
@description('BATON_SLACK_WEBHOOK_URL (Key Vault). Empty: off.')
param slackWebhookUrl string = ''

@secure()
@description('BATON_SLACK_SIGNING_SECRET (Key Vault). Empty: off.')
param slackSigningSecret string = ''

@secure()
@description('BATON_SLACK_BOT_TOKEN (Key Vault): Reject in Slack asks for a reason in a modal. Empty: off.')
param slackBotToken string = ''

@secure()
@description('BATON_TEAMS_WEBHOOK_URL: a Teams incoming webhook or Workflows URL (Key Vault). Empty: off.')
param teamsWebhookUrl string = ''

@description('BATON_TEAMS_APP_ID: the Azure Bot\'s Microsoft app id (single-tenant, or the client id of its user-assigned managed identity). Empty: no Teams bot.')
param teamsAppId string = ''

@secure()
@description('BATON_TEAMS_APP_PASSWORD: the bot\'s client secret (Key Vault). Empty: the managed identity whose client id is teamsAppId.')
param teamsAppPassword string = ''

@description('BATON_TEAMS_TENANT_ID: the tenant of the bot\'s app registration. Empty: this deployment\'s tenant.')
param teamsTenantId string = ''

@secure()
@description('BATON_SMTP_URL, with its password (Key Vault). Empty: off.')
param smtpUrl string = ''

@description('BATON_WEBHOOK_URL: where signed webhooks go. Empty: off.')
param webhookUrl string = ''

@secure()
@description('BATON_WEBHOOK_SECRET: signs the webhooks (Key Vault). Empty: off.')
param webhookSecret string = ''

@description('BATON_SMTP_FROM: the sender of notification emails.')
param smtpFrom string = 'baton@localhost'

@minValue(1)
@description('BATON_CLAIM_SECONDS: how long a claim on a request is exclusive.')
param claimSeconds int = 900

@minValue(1024)
@description('BATON_MAX_BODY_BYTES: the largest request body accepted (413 beyond it).')
param maxBodyBytes int = 262144

@description('BATON_WORKFLOWS: extra workflow modules in the image, comma-separated.')
param workflows string = ''

@description('BATON_POLICIES: a policies file (YAML) in the image. Empty: the rules shipped with Baton.')
param policies string = ''

@minValue(1)
@maxValue(64)
@description('BATON_WORKER_CONCURRENCY: jobs at once per worker replica.')
param workerConcurrency int = 4

@minValue(10)
@description('BATON_WORKER_POLL_MS: how often a worker looks for due timers (queued jobs wake it at once).')
param workerPollMs int = 500

@description('BATON_JOB_LEASE_SECONDS: how long a job stays leased to a worker that stopped renewing it.')
param jobLeaseSeconds int = 30

@allowed(['DEBUG', 'INFO', 'WARNING', 'ERROR'])
@description('BATON_LOG_LEVEL of both apps.')
param logLevel string = 'INFO'

@minValue(1)
@description('Fewest web replicas (1 keeps the live stream and sign-in warm).')
param webMinReplicas int = 1

@minValue(1)
@description('Most web replicas (scaled on concurrent HTTP requests).')
param webMaxReplicas int = 2

@minValue(1)
@description('Worker replicas.')
param workerReplicas int = 1

var tags = { 'azd-env-name': environmentName }
var token = toLower(uniqueString(subscription().id, environmentName, location))
var createOpenAi = empty(openAiAccountName)

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    location: location
    tags: tags
    workspaceName: 'log-${token}'
    appInsightsName: 'appi-${token}'
  }
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    location: location
    tags: tags
    name: 'id-baton-${token}'
  }
}

module registry 'modules/registry.bicep' = {
  name: 'registry'
  scope: rg
  params: {
    location: location
    tags: tags
    name: 'cr${token}'
    pullPrincipalId: identity.outputs.principalId
  }
}

module postgres 'modules/postgres.bicep' = {
  name: 'postgres'
  scope: rg
  params: {
    location: location
    tags: tags
    name: 'psql-${token}'
    administratorLogin: postgresAdminLogin
    administratorPassword: postgresAdminPassword
    databaseName: postgresDatabaseName
    skuName: postgresSkuName
    skuTier: postgresSkuTier
    storageGb: postgresStorageGb
    version: postgresVersion
  }
}

module vault 'modules/vault.bicep' = {
  name: 'vault'
  scope: rg
  params: {
    location: location
    tags: tags
    name: 'kv-${token}'
    readerPrincipalId: identity.outputs.principalId
    officerPrincipalId: principalId
    officerPrincipalType: principalType
    // asyncpg reads sslmode from the URL; the server refuses connections without TLS.
    databaseUrl: 'postgresql://${postgresAdminLogin}:${uriComponent(postgresAdminPassword)}@${postgres.outputs.fqdn}:5432/${postgresDatabaseName}?sslmode=require'
    postgresAdminPassword: postgresAdminPassword
    secretKey: secretKey
    authClientSecret: authClientSecret
    slackWebhookUrl: slackWebhookUrl
    slackSigningSecret: slackSigningSecret
    slackBotToken: slackBotToken
    teamsWebhookUrl: teamsWebhookUrl
    teamsAppPassword: teamsAppPassword
    smtpUrl: smtpUrl
    webhookSecret: webhookSecret
  }
}

module openAi 'modules/openai.bicep' = {
  name: 'openai'
  scope: resourceGroup(createOpenAi ? rg.name : openAiResourceGroupName)
  params: {
    create: createOpenAi
    name: createOpenAi ? 'oai-${token}' : openAiAccountName
    location: empty(openAiLocation) ? location : openAiLocation
    tags: tags
    deploymentName: openAiDeploymentName
    modelName: openAiModelName
    modelVersion: openAiModelVersion
    capacity: openAiCapacity
    userPrincipalId: identity.outputs.principalId
  }
}

module apps 'modules/apps.bicep' = {
  name: 'apps'
  scope: rg
  params: {
    location: location
    tags: tags
    environmentName: 'cae-${token}'
    webName: 'ca-web-${token}'
    workerName: 'ca-worker-${token}'
    webExists: webExists
    workerExists: workerExists
    workspaceName: monitoring.outputs.workspaceName
    appInsightsName: monitoring.outputs.appInsightsName
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    registryServer: registry.outputs.loginServer
    secretUris: vault.outputs.secretUris
    model: model
    openAiEndpoint: openAi.outputs.endpoint
    openAiDeploymentName: openAiDeploymentName
    openAiApiVersion: openAiApiVersion
    policies: policies
    authClientId: authClientId
    authUnauthenticatedAction: authUnauthenticatedAction
    easyAuthGroups: easyAuthGroups
    easyAuthAdminGroup: easyAuthAdminGroup
    webhookUrl: webhookUrl
    teamsAppId: teamsAppId
    teamsTenantId: teamsTenantId
    smtpFrom: smtpFrom
    claimSeconds: claimSeconds
    maxBodyBytes: maxBodyBytes
    workflows: workflows
    workerConcurrency: workerConcurrency
    workerPollMs: workerPollMs
    jobLeaseSeconds: jobLeaseSeconds
    logLevel: logLevel
    webMinReplicas: webMinReplicas
    webMaxReplicas: webMaxReplicas
    workerReplicas: workerReplicas
  }
  // The apps resolve their Key Vault references and pull from the registry as the identity at
  // creation: its roles must be granted first.
  dependsOn: [
    registry
    vault
  ]
}

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = registry.outputs.loginServer
output AZURE_CONTAINER_REGISTRY_NAME string = registry.outputs.name
output AZURE_CONTAINER_ENVIRONMENT_NAME string = apps.outputs.environmentName
output AZURE_KEY_VAULT_NAME string = vault.outputs.name
output AZURE_POSTGRES_HOST string = postgres.outputs.fqdn
output AZURE_OPENAI_ENDPOINT string = openAi.outputs.endpoint
output AZURE_MANAGED_IDENTITY_CLIENT_ID string = identity.outputs.clientId
output SERVICE_WEB_NAME string = apps.outputs.webName
output SERVICE_WEB_URI string = apps.outputs.webUri
output SERVICE_WORKER_NAME string = apps.outputs.workerName
